"""A KL730 tensor's stored values in float, by its reported ``radix``, ``scale`` and
``quantized_axis``: ``x = q / (scale * 2**radix)``, one pair per tensor or per channel
(``npu_hil.harness.farm.decode``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from npu_hil.targets.quant import per_axis


class KneronDecode:
    keys = "radix and scale"

    def claims(self, reported: Mapping[str, Any]) -> bool:
        return "radix" in reported and "scale" in reported

    def dequantize(self, q: np.ndarray, reported: Mapping[str, Any], what: str) -> np.ndarray:
        axis = int(reported.get("quantized_axis", 1))
        radix = per_axis(reported["radix"], axis, q.ndim, what)
        scale = per_axis(reported["scale"], axis, q.ndim, what)
        out: np.ndarray = q / (scale * 2.0**radix)
        return out
