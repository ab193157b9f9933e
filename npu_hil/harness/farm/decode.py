"""A device buffer of a run as the model's tensor: unpacked with the layout the run used, and
optionally turned into float values with the quantization the runtime reported for it.

The schemes are the vendor units' (``Vendor.decode``, ``npu_hil/targets/<vendor>/decode.py``): the
first unit whose decoder recognises the reported fields turns the stored values into floats.

A float tensor (the runtime kept float data) is returned as float32 whatever the scheme says.
"""

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
