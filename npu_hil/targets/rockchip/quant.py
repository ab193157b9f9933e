"""How an RKNN tensor's values relate to floats, read from its ``rknn_tensor_attr``: the
quantization model the oracle (``npu_hil.harness.expect``) and the simulator share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from npu_hil.targets.quant import Affine, Cast, Quantizer
from npu_hil.targets.rockchip.attrs import RknnTensorAttr, rknn_attr_of
from npu_hil.targets.rockchip.layouts import RKNN_TYPES

AFFINE = "AFFINE_ASYMMETRIC"
NONE = "NONE"
DTYPE_OF_TYPE = {name: np.dtype(dtype) for dtype, name in RKNN_TYPES.items()}


# The harness hands in a tensor's record as its runtime reported it (rknn_attr_of checks it).


def quantizer(attributes: Mapping[str, object]) -> Quantizer:
    """How the tensor's values relate to floats, from its ``rknn_tensor_attr``."""
    return _quantizer(rknn_attr_of(attributes))


def _quantizer(attributes: RknnTensorAttr) -> Quantizer:
    dtype = DTYPE_OF_TYPE.get(str(attributes.get("type")), np.dtype("int8"))
    if attributes.get("qnt_type") == AFFINE:
        return Affine(int(attributes["zp"]), float(attributes["scale"]), np.dtype("int8"))
    return Cast(dtype if dtype.kind == "f" else np.dtype("float16"))


def model_input(attributes: Mapping[str, object], held: np.ndarray) -> np.ndarray:
    """What the model computes on for an input held as ``held`` (its logical values).

    Pass-through bytes are the model's own quantized input: dequantized. Otherwise the runtime
    converts the declared values (mean 0, scale 1) into the first layer's type: quantized with
    the model's zp/scale (int8 models) or rounded to float16.
    """
    attr = rknn_attr_of(attributes)
    quant = _quantizer(attr)
    if isinstance(quant, Affine):
        if attr.get("pass_through"):
            dequantized = quant.dequantize(held)
        else:
            dequantized = quant.dequantize(quant.quantize(held))  # converted there if need be
        return dequantized.astype(np.float32)
    float16: np.ndarray = held.astype(np.float16).astype(np.float32)
    return float16


def output_quantizer(attributes: Mapping[str, object]) -> Quantizer:
    return quantizer(attributes)


def numerics(inputs: Sequence[Mapping[str, object]]) -> str:
    """int8 through the graph for a quantized model (its inputs are AFFINE_ASYMMETRIC), float16
    otherwise: what the simulated board computes (``RockchipSim.numerics``)."""
    if any(rknn_attr_of(attrs).get("qnt_type") == AFFINE for attrs in inputs):
        return "int8"
    return "float16"
