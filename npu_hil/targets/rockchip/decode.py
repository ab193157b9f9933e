"""An RKNN tensor's stored values in float, by its reported ``qnt_type``: ``AFFINE_ASYMMETRIC``
``x = (q - zp) * scale``; ``DFP`` ``x = q / 2**fl``; ``NONE`` a cast
(``npu_hil.harness.farm.decode``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from npu_hil.harness.errors import DeviceError
from npu_hil.targets.rockchip.layouts import RKNN_QNT_CODES


class RockchipDecode:
    keys = "qnt_type"

    def claims(self, reported: Mapping[str, Any]) -> bool:
        return "qnt_type" in reported

    def dequantize(self, q: np.ndarray, reported: Mapping[str, Any], what: str) -> np.ndarray:
        kind = reported["qnt_type"]
        kind = RKNN_QNT_CODES.get(kind, str(kind)) if isinstance(kind, int) else str(kind)
        if kind == "AFFINE_ASYMMETRIC":
            out: np.ndarray = (q - float(reported["zp"])) * float(reported["scale"])
            return out
        if kind == "DFP":
            dfp: np.ndarray = q / 2.0 ** int(reported["fl"])
            return dfp
        if kind == "NONE":
            return q
        raise DeviceError(f"{what}: unknown RKNN qnt_type {kind!r}")
