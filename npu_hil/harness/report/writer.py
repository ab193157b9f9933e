"""A run's report files. The plugin calls :func:`append_record` as each test finishes and
:func:`write_run` at the session's end; ``write_run(run_dir, None, meta)`` rebuilds the report of
a run that crashed before its end."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from npu_hil.harness.report.atomic import sync_file, write_chunks_atomic, write_text_atomic
from npu_hil.harness.report.case_texts import CaseTexts
from npu_hil.harness.report.compare import build_comparison
from npu_hil.harness.report.html import build_html
from npu_hil.harness.report.junit import junit_chunks
from npu_hil.harness.report.records import TestRecord, last_attempts
from npu_hil.harness.report.records import scrubbed as scrub_record
from npu_hil.harness.report.runmeta import RunMeta
from npu_hil.harness.report.runs import (
    RECORDS_FILE,
    SUMMARY_FILE,
    append_record,
    load_records,
    new_run_dir,
    run_dir_for_session,
    write_outcomes,
)
from npu_hil.harness.report.sanitize import clean_value
from npu_hil.harness.report.summary import RunHistory, build_summary

if TYPE_CHECKING:
    from npu_hil.harness.history.trends import TrendsView

JUNIT_FILE = "junit.xml"
COMPARISON_FILE = "comparison.json"
HTML_FILE = "report.html"

__all__ = [
    "COMPARISON_FILE",
    "HTML_FILE",
    "JUNIT_FILE",
    "RECORDS_FILE",
    "SUMMARY_FILE",
    "append_record",
    "load_records",
    "new_run_dir",
    "run_dir_for_session",
    "write_run",
]


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
    :func:`append_record` returned; ``texts``: their JUnit elements and page rows, if made."""
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
