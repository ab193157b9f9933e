"""Per-vendor seed tables as data, and the predictions derived from them."""

from __future__ import annotations

from npu_hil.targets.conv import ConvCheck, check_conv
from npu_hil.targets.tables import last_op_kind, tables_text

__all__ = ["ConvCheck", "check_conv", "last_op_kind", "tables_text"]
