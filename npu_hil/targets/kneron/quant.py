"""How a KL730 tensor's values relate to floats, read from its node descriptor: the
quantization model the oracle (``npu_hil.harness.expect``) and the simulator share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from npu_hil.harness.errors import LayoutError
from npu_hil.targets.kneron import kl730
from npu_hil.targets.kneron.attrs import NodeDescriptor, node_descriptor_of
from npu_hil.targets.quant import FixedPoint

CHANNEL_AXIS = 1


# The harness hands in a tensor's record as its runtime reported it (node_descriptor_of checks
# it).


def storage_dtype(attributes: NodeDescriptor) -> np.dtype:
    fmt = kl730.FORMATS[str(attributes["data_layout"])]
    return np.dtype("int16" if fmt.bits == 16 else "int8")


def quantizer(attributes: Mapping[str, object]) -> FixedPoint:
    """Fixed point from a node descriptor (per channel when it lists several radixes)."""
    return _quantizer(node_descriptor_of(attributes))


def _quantizer(attributes: NodeDescriptor) -> FixedPoint:
    fmt = kl730.FORMATS[str(attributes["data_layout"])]
    radix = tuple(int(r) for r in attributes["radix"])
    scale = tuple(_scale(s) for s in attributes["scale"])
    axis = _axis(attributes.get("quantized_axis", CHANNEL_AXIS)) if len(radix) > 1 else None
    dtype = storage_dtype(attributes)
    bits = 15 if fmt.quirk_15bit else 8 * dtype.itemsize
    return FixedPoint(radix, scale, axis, dtype, bits)


def _scale(value: float | None) -> float:
    if value is None:
        raise LayoutError("kl730 node descriptor: a scale the node does not report")
    return float(value)


def _axis(value: int | None) -> int:
    if value is None:
        raise LayoutError("kl730 node descriptor: a per-channel node reports no quantized_axis")
    return int(value)


def model_input(attributes: Mapping[str, object], held: np.ndarray) -> np.ndarray:
    """The float the model sees: ``fixed / (scale * 2**radix)``."""
    dequantized: np.ndarray = quantizer(attributes).dequantize(held).astype(np.float32)
    return dequantized


def output_quantizer(attributes: Mapping[str, object]) -> FixedPoint:
    return quantizer(attributes)


def numerics(inputs: Sequence[Mapping[str, object]]) -> str:
    """The float graph: its simulated board quantizes inputs and outputs only (its compiler's
    numerics are not modeled through the graph yet)."""
    return "float"
