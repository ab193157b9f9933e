"""A device buffer's values in float, by the quantization the runtime reported: the first vendor
unit's decoder (``npu_hil/targets/<vendor>/decode.py``) that recognises the reported fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from npu_hil.harness.errors import DeviceError
from npu_hil.targets.registry import units


def dequantize(values: np.ndarray, reported: Mapping[str, Any], what: str) -> np.ndarray:
    """``values`` (the logical tensor as stored) in float, by the reported scheme."""
    stored = np.asarray(values)
    if np.issubdtype(stored.dtype, np.floating):
        return stored.astype(np.float32)
    q = stored.astype(np.float64)
    decoders = [unit.decode for unit in units() if unit.decode is not None]
    for decoder in decoders:
        if decoder.claims(reported):
            return np.asarray(decoder.dequantize(q, reported, what), dtype=np.float32)
    keys = [d.keys for d in decoders]
    expected = ", ".join(keys[:-1]) + (", or " if len(keys) > 1 else "") + keys[-1]
    raise DeviceError(
        f"{what}: the runtime reported no quantization parameters (expected {expected}; "
        f"got {sorted(reported)})"
    )
