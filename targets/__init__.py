"""Per-vendor seed tables as data, and the predictions derived from them."""

from __future__ import annotations

from targets.conv import ConvCheck, check_conv
from targets.tables import last_op_kind, tables_text

__all__ = ["ConvCheck", "check_conv", "last_op_kind", "tables_text"]
