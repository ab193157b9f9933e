"""Buffer diffs that say what is wrong and where: values, padding, length, attributes, layout."""

from __future__ import annotations

from npu_hil.harness.diff.buffers import diff_buffers
from npu_hil.harness.diff.forensics import explain
from npu_hil.harness.diff.report import DiffReport

__all__ = ["DiffReport", "diff_buffers", "explain"]
