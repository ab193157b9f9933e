"""How a Horizon tensor's values relate to floats, read from its ``hbDNNTensorProperties``: the
quantization model the oracle (``npu_hil.harness.expect``) and the simulator share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from npu_hil.targets.horizon.attrs import TensorProperties, properties_of
from npu_hil.targets.horizon.images import nv12_planes, y_plane
from npu_hil.targets.horizon.layouts import TENSOR_TYPES
from npu_hil.targets.quant import Cast, HorizonScale, HorizonShift, Quantizer

DTYPE_OF_TYPE = {name: np.dtype(dtype) for dtype, name in TENSOR_TYPES.items()}


# The harness hands in a tensor's record as its runtime reported it (properties_of checks it).


def quantizer(attributes: Mapping[str, object]) -> Quantizer:
    """How the tensor's values relate to floats, from its properties."""
    return _quantizer(properties_of(attributes))


def _quantizer(attributes: TensorProperties) -> Quantizer:
    kind = attributes.get("quantiType", "NONE")
    tensor_type = str(attributes.get("tensorType"))
    dtype = DTYPE_OF_TYPE.get(tensor_type, np.dtype("uint8"))
    if kind == "SCALE":
        scales = tuple(float(s) for s in attributes["scale"])
        zeros = tuple(int(z) for z in attributes.get("zeroPoint") or [0] * len(scales))
        axis = int(attributes.get("quantizeAxis", 0)) if len(scales) > 1 else None
        return HorizonScale(scales, zeros, axis, dtype)
    if kind == "SHIFT":
        shifts = tuple(int(s) for s in attributes["shift"])
        axis = int(attributes.get("quantizeAxis", 0)) if len(shifts) > 1 else None
        return HorizonShift(shifts, axis, dtype)
    return Cast(dtype)


def model_input(attributes: Mapping[str, object], held: np.ndarray) -> np.ndarray:
    """What the model computes on for an input held as ``held``."""
    properties = properties_of(attributes)
    tensor_type = properties.get("tensorType")
    if tensor_type in ("NV12", "NV12_SEPARATE"):
        return nv12_planes(held)
    if tensor_type == "Y":
        return y_plane(held)
    dequantized: np.ndarray = _quantizer(properties).dequantize(held).astype(np.float32)
    return dequantized


def output_quantizer(attributes: Mapping[str, object]) -> Quantizer:
    return quantizer(attributes)


def numerics(inputs: Sequence[Mapping[str, object]]) -> str:
    """The float graph: its simulated board quantizes inputs and outputs only (its compiler's
    numerics are not modeled through the graph yet)."""
    return "float"
