"""Kneron (KL730): the format table with its provenance and the layouts (:mod:`.kl730`), the
report reader (:mod:`.reported`), the node descriptor and its quantization (:mod:`.quant`) and
the vendor unit (:mod:`.unit`). ``from npu_hil.targets.kneron import kl730`` is the format module.
"""

from __future__ import annotations

from npu_hil.targets.kneron import kl730
from npu_hil.targets.kneron.unit import UNIT

__all__ = ["UNIT", "kl730"]
