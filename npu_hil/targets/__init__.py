"""Per-vendor seed tables as data, the predictions derived from them, and the vendor units.

Each vendor is one package here (``rockchip``, ``horizon``, ``kneron``) holding its
:class:`~npu_hil.targets.unit.Vendor` as ``UNIT``, named in the ``npu_hil.vendors`` entry-point
group and loaded by :mod:`npu_hil.targets.registry` on the first lookup: importing this package
imports no vendor. A new vendor is a distribution with one entry in that group.
"""

from __future__ import annotations

from npu_hil.targets.conv import ConvCheck, ConvSite, check_conv
from npu_hil.targets.tables import last_op_kind, tables_text

__all__ = ["ConvCheck", "ConvSite", "check_conv", "last_op_kind", "tables_text"]
