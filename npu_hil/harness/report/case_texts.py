"""Each case's JUnit ``<testcase>`` and page row, made as its record arrives: at 12,000 cases,
rendering them all at the end took 2-3 s of the run's bookkeeping, while the controller idles
during the run. A record first met at the end (a report rebuilt from records.jsonl) is rendered
then."""

from __future__ import annotations

import zlib
from pathlib import Path

from npu_hil.harness.report.html import row_parts
from npu_hil.harness.report.junit import testcase_text
from npu_hil.harness.report.records import TestRecord


def folded(record: TestRecord) -> bool:
    """Whether the page shows the case folded (passed, skipped, quarantined) or open."""
    return record.outcome not in ("failed", "error")


class CaseTexts:
    """Texts by record, deflated (a 12,000-case run's are 50 MB as text, a few MB so): the
    record itself is kept beside them, so a text is only ever given for the very record it was
    made from (an id is reused once its object is gone)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._junit: dict[int, tuple[TestRecord, bytes]] = {}
        self._rows: dict[int, tuple[TestRecord, int, bytes]] = {}

    def add(self, record: TestRecord) -> None:
        self._junit[id(record)] = (record, _deflated(testcase_text(record) + "\n"))
        before, after = row_parts(self.run_dir, record, folded(record))
        self._rows[id(record)] = (record, len(before), _deflated(before + after))

    def junit(self, record: TestRecord) -> bytes:
        """The record's ``<testcase>`` element and its newline, UTF-8."""
        found = self._junit.get(id(record))
        if found is not None and found[0] is record:
            return zlib.decompress(found[1])
        return (testcase_text(record) + "\n").encode("utf-8")

    def html_row(self, run_dir: Path, record: TestRecord, shown_folded: bool) -> tuple[str, str]:
        found = self._rows.get(id(record))
        if (
            found is not None
            and found[0] is record
            and run_dir == self.run_dir
            and shown_folded == folded(record)
        ):
            row = zlib.decompress(found[2]).decode("utf-8")
            return row[: found[1]], row[found[1] :]
        return row_parts(run_dir, record, shown_folded)


def _deflated(text: str) -> bytes:
    # Level 1: a tenth of the size for a fraction of the time of a higher level.
    return zlib.compress(text.encode("utf-8"), 1)
