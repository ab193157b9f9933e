"""Each case's JUnit ``<testcase>`` and report-page row, made once, as its record arrives.

The controller of a run is mostly idle while the cases run and busy after the last one: at
12,000 cases, rendering every case into the JUnit file and the page took 2-3 s of the run's
bookkeeping. Made as each record arrives, the end only joins them. A record met for the first
time at the end (a report rebuilt from ``records.jsonl``) is rendered then, the same way.
"""

from __future__ import annotations

from pathlib import Path

from npu_hil.harness.report.html import row_parts
from npu_hil.harness.report.junit import testcase_text
from npu_hil.harness.report.records import TestRecord

__all__ = ["CaseTexts", "folded"]


def folded(record: TestRecord) -> bool:
    """Whether the page shows the case folded (passed, skipped, quarantined) or open."""
    return record.outcome not in ("failed", "error")


class CaseTexts:
    """Texts by record: the record itself is kept beside them, so a text is only ever given
    for the very record it was made from (an id is reused once its object is gone)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._junit: dict[int, tuple[TestRecord, str]] = {}
        self._rows: dict[int, tuple[TestRecord, tuple[str, str]]] = {}

    def add(self, record: TestRecord) -> None:
        self._junit[id(record)] = (record, testcase_text(record))
        self._rows[id(record)] = (record, row_parts(self.run_dir, record, folded(record)))

    def junit(self, record: TestRecord) -> str:
        found = self._junit.get(id(record))
        return found[1] if found is not None and found[0] is record else testcase_text(record)

    def html_row(self, run_dir: Path, record: TestRecord, shown_folded: bool) -> tuple[str, str]:
        found = self._rows.get(id(record))
        if (
            found is not None
            and found[0] is record
            and run_dir == self.run_dir
            and shown_folded == folded(record)
        ):
            return found[1]
        return row_parts(run_dir, record, shown_folded)
