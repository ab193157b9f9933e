"""Per-vendor seed tables as data, the predictions derived from them, and the vendor units.

Each vendor is one package here (``kneron``, ``rockchip``, ``horizon``) that registers its
:class:`~npu_hil.targets.unit.Vendor` with :mod:`npu_hil.targets.registry` on import; importing
this package loads them all. A new vendor is a new package and one import line below.
"""

from __future__ import annotations

from npu_hil.targets import horizon, kneron, rockchip
from npu_hil.targets.conv import ConvCheck, check_conv
from npu_hil.targets.kneron import kl730
from npu_hil.targets.tables import last_op_kind, tables_text

__all__ = [
    "ConvCheck",
    "check_conv",
    "horizon",
    "kl730",
    "kneron",
    "last_op_kind",
    "rockchip",
    "tables_text",
]
