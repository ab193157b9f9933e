"""A run's report files, and each case's JUnit ``<testcase>`` and page row made as its record
arrives (:class:`CaseTexts`: at 12,000 cases, rendering them all at the end took 2-3 s of the
run's bookkeeping, while the controller idles during the run; a record first met at the end, as
in a report rebuilt from records.jsonl, is rendered then). The plugin calls
:func:`~npu_hil.harness.report.runs.append_record` as each test finishes and :func:`write_run` at
the session's end; ``write_run(run_dir, None, meta)`` rebuilds the report of a run that crashed
before its end."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from npu_hil.harness.report.atomic import sync_file, write_chunks_atomic, write_text_atomic
from npu_hil.harness.report.compare import build_comparison
from npu_hil.harness.report.html import build_html, folded, row_parts
from npu_hil.harness.report.junit import junit_chunks, testcase_text
from npu_hil.harness.report.records import TestRecord, last_attempts
from npu_hil.harness.report.records import scrubbed as scrub_record
from npu_hil.harness.report.runmeta import RunMeta
from npu_hil.harness.report.runs import RECORDS_FILE, SUMMARY_FILE, load_records, write_outcomes
from npu_hil.harness.report.sanitize import clean_value
from npu_hil.harness.report.summary import RunHistory, build_summary

if TYPE_CHECKING:
    from npu_hil.harness.history.trends import TrendsView

JUNIT_FILE = "junit.xml"
COMPARISON_FILE = "comparison.json"
HTML_FILE = "report.html"


class CaseTexts:
    """Texts by record, deflated (a 12,000-case run's are 50 MB as text, a few MB so): the
    record itself is kept beside them, so a text is only ever given for the very record it was
    made from (an id is reused once its object is gone)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        # id -> (the record, its <testcase>, the length of its row's first part, its row)
        self._texts: dict[int, tuple[TestRecord, bytes, int, bytes]] = {}

    def add(self, record: TestRecord) -> None:
        before, after = row_parts(self.run_dir, record, folded(record))
        junit = _deflated(testcase_text(record))
        self._texts[id(record)] = (record, junit, len(before), _deflated(before + after))

    def _made(self, record: TestRecord) -> tuple[TestRecord, bytes, int, bytes] | None:
        found = self._texts.get(id(record))
        return found if found is not None and found[0] is record else None

    def junit(self, record: TestRecord) -> bytes:
        """The record's ``<testcase>`` element and its newline, UTF-8."""
        found = self._made(record)
        return zlib.decompress(found[1]) if found else testcase_text(record).encode("utf-8")

    def html_row(self, run_dir: Path, record: TestRecord, shown_folded: bool) -> tuple[str, str]:
        found = self._made(record)
        if found is None or run_dir != self.run_dir or shown_folded != folded(record):
            return row_parts(run_dir, record, shown_folded)
        row = zlib.decompress(found[3]).decode("utf-8")
        return row[: found[2]], row[found[2] :]


def _deflated(text: str) -> bytes:
    # Level 1: a tenth of the size for a fraction of the time of a higher level.
    return zlib.compress(text.encode("utf-8"), 1)


def write_run(
    run_dir: str | Path,
    records: Sequence[TestRecord] | None,
    meta: RunMeta,
    *,
    history: RunHistory | None = None,
    trends: TrendsView | None = None,
    scrubbed: bool = False,
    texts: CaseTexts | None = None,
) -> None:
    """Write every report file of the run; ``records=None`` reads them from records.jsonl.
    ``history``: summary.json's ``history`` (None: not known, as in a report rebuilt after a
    crash); ``trends``: the page's history view, if any; ``scrubbed``: the records are the ones
    ``append_record`` returned; ``texts``: their JUnit elements and page rows, if made."""
    path = Path(run_dir)
    path.mkdir(parents=True, exist_ok=True)
    chosen = last_attempts(load_records(path) if records is None else records)
    if not scrubbed:
        chosen = [scrub_record(r) for r in chosen]
    # Every writer below takes clean text (npu_hil.harness.report.sanitize): the records are
    # cleaned by ``scrub_record`` (here or as they were appended), the meta (command line, paths)
    # and the comparison (past runs' summaries, maybe written by an older harness) here.
    full_meta = clean_value({"run_id": path.name, **dict(meta)})
    summary = build_summary(chosen, full_meta, history=history)
    comparison = clean_value(build_comparison(path, chosen, full_meta))
    summary["comparison"] = {
        k: len(v)
        for k, v in comparison.items()
        if isinstance(v, list) and k not in ("window", "trend")
    }
    summary["comparison"]["previous_run"] = comparison["previous_run"]
    summary["comparison"]["baseline"] = comparison["baseline"]
    write_chunks_atomic(path / JUNIT_FILE, junit_chunks(chosen, full_meta, texts=texts))
    write_text_atomic(path / COMPARISON_FILE, json.dumps(comparison, indent=2) + "\n")
    write_text_atomic(
        path / HTML_FILE, build_html(path, chosen, summary, comparison, trends, texts)
    )
    write_outcomes(path, chosen)
    sync_file(path / RECORDS_FILE)  # its last lines, appended since the last forced write
    # summary.json last: its presence says the run's report is complete.
    write_text_atomic(path / SUMMARY_FILE, json.dumps(summary, indent=2, default=str) + "\n")
