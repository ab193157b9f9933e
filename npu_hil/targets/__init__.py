"""Per-vendor seed tables as data, the predictions derived from them, and the vendor units.

Each vendor is one package here (``rockchip``, ``horizon``, ``kneron``) holding its
:class:`~npu_hil.targets.unit.Vendor` as ``UNIT``; importing this package registers them with
:mod:`npu_hil.targets.registry`, in the order every listing of targets follows. A new vendor is a
new package and one entry in :data:`BUILT_IN` (or a ``register()`` call of its own).
"""

from __future__ import annotations

from npu_hil.targets import horizon, kneron, rockchip
from npu_hil.targets.conv import ConvCheck, check_conv
from npu_hil.targets.kneron import kl730
from npu_hil.targets.registry import register
from npu_hil.targets.tables import last_op_kind, tables_text

BUILT_IN = (rockchip.UNIT, horizon.UNIT, kneron.UNIT)
"""The vendor units shipped with the harness, in registration order."""

for _unit in BUILT_IN:
    register(_unit)

__all__ = [
    "BUILT_IN",
    "ConvCheck",
    "check_conv",
    "horizon",
    "kl730",
    "kneron",
    "last_op_kind",
    "rockchip",
    "tables_text",
]
