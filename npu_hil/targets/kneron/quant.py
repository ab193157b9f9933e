"""How a KL730 tensor's values relate to floats, read from its node descriptor: the
quantization model the oracle (``npu_hil.harness.expect``) and the simulator share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from npu_hil.targets.kneron import kl730
from npu_hil.targets.quant import FixedPoint

CHANNEL_AXIS = 1


def storage_dtype(attributes: dict[str, Any]) -> np.dtype:
    fmt = kl730.FORMATS[str(attributes["data_layout"])]
    return np.dtype("int16" if fmt.bits == 16 else "int8")


def quantizer(attributes: dict[str, Any]) -> FixedPoint:
    """Fixed point from a node descriptor (per channel when it lists several radixes)."""
    fmt = kl730.FORMATS[str(attributes["data_layout"])]
    radix = tuple(int(r) for r in attributes["radix"])
    scale = tuple(float(s) for s in attributes["scale"])
    axis = int(attributes.get("quantized_axis", CHANNEL_AXIS)) if len(radix) > 1 else None
    dtype = storage_dtype(attributes)
    bits = 15 if fmt.quirk_15bit else 8 * dtype.itemsize
    return FixedPoint(radix, scale, axis, dtype, bits)


def model_input(attributes: dict[str, Any], held: np.ndarray) -> np.ndarray:
    """The float the model sees: ``fixed / (scale * 2**radix)``."""
    dequantized: np.ndarray = quantizer(attributes).dequantize(held).astype(np.float32)
    return dequantized


def output_quantizer(attributes: dict[str, Any]) -> FixedPoint:
    return quantizer(attributes)


def numerics(inputs: Sequence[dict[str, Any]]) -> str:
    """The float graph: its simulated board quantizes inputs and outputs only (its compiler's
    numerics are not modeled through the graph yet)."""
    return "float"
