"""Per-vendor seed tables as data, the predictions derived from them, and the vendor units (one
package each, loaded by :mod:`npu_hil.targets.registry` on the first lookup: importing this
package imports no vendor)."""

from __future__ import annotations

from npu_hil.targets.conv import ConvCheck, ConvSite, check_conv
from npu_hil.targets.tables import last_op_kind, tables_text

__all__ = ["ConvCheck", "ConvSite", "check_conv", "last_op_kind", "tables_text"]
