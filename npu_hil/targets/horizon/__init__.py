"""Horizon Robotics BPU (RDK X3, X5, S100): the alignment rules of seeds/003 with their
provenance, the layouts and predictions (:mod:`.layouts`), the report reader (:mod:`.reported`),
the tensor record and quantization model (:mod:`.quant`) and the vendor unit (:mod:`.unit`).
"""

from __future__ import annotations

from npu_hil.targets.horizon.layouts import TARGETS, needs_padding

__all__ = ["TARGETS", "needs_padding"]
