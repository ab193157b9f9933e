"""Run reports under ``reports/<run-id>/``: JUnit XML, JSON summary, HTML, run comparison."""

from __future__ import annotations

from npu_hil.harness.report.records import OUTCOMES, TensorFinding, TestRecord
from npu_hil.harness.report.writer import append_record, load_records, new_run_dir, write_run

__all__ = [
    "OUTCOMES",
    "TensorFinding",
    "TestRecord",
    "append_record",
    "load_records",
    "new_run_dir",
    "write_run",
]
