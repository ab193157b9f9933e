"""Run reports under ``reports/<run-id>/`` (docs/farm/nightly.md). The names below are imported
on first use (PEP 562): the plugin reads :mod:`~npu_hil.harness.report.records` in every pytest
run, and importing this package must not pull in the report writers with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from npu_hil.harness.lazyexports import lazy_exports

if TYPE_CHECKING:
    from npu_hil.harness.report.records import OUTCOMES, TensorFinding, TestRecord
    from npu_hil.harness.report.runs import append_record, load_records, new_run_dir
    from npu_hil.harness.report.writer import write_run

# name -> the module of this package that defines it (the imports above, for type checkers)
_EXPORTS = {
    "OUTCOMES": "records",
    "TensorFinding": "records",
    "TestRecord": "records",
    "append_record": "runs",
    "load_records": "runs",
    "new_run_dir": "runs",
    "write_run": "writer",
}

__all__ = [
    "OUTCOMES",
    "TensorFinding",
    "TestRecord",
    "append_record",
    "load_records",
    "new_run_dir",
    "write_run",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)
