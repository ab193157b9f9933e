"""A Horizon tensor's stored values in float, by its reported ``quantiType``: ``SCALE``
``x = (q - zeroPoint) * scale`` per ``quantizeAxis`` (one value per tensor, or one per channel);
``SHIFT`` ``x = q / 2**shift``; ``NONE`` a cast (``npu_hil.harness.farm.decode``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from npu_hil.harness.errors import DeviceError
from npu_hil.targets.quant import per_axis


class HorizonDecode:
    keys = "quantiType"

    def claims(self, reported: Mapping[str, Any]) -> bool:
        return "quantiType" in reported

    def dequantize(self, q: np.ndarray, reported: Mapping[str, Any], what: str) -> np.ndarray:
        kind = str(reported["quantiType"])
        axis = int(reported.get("quantizeAxis", 0))
        if kind == "SCALE":
            scale = per_axis(reported["scale"], axis, q.ndim, what)
            zeros = reported.get("zeroPoint") or [0]
            out: np.ndarray = (q - per_axis(zeros, axis, q.ndim, what)) * scale
            return out
        if kind == "SHIFT":
            shifted: np.ndarray = q / 2.0 ** per_axis(reported["shift"], axis, q.ndim, what)
            return shifted
        if kind == "NONE":
            return q
        raise DeviceError(f"{what}: unknown Horizon quantiType {kind!r}")
