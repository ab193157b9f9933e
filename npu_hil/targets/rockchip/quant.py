"""RKNN's tensor record (``rknn_tensor_attr``, its enums from ``rknn_api.h``) and how its values
relate to floats: the quantization model the oracle (``npu_hil.harness.expect``) and the
simulator share, and the decoder of a real board's values (``npu_hil.harness.farm.decode``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
from typing_extensions import TypedDict

from npu_hil.harness.errors import DeviceError
from npu_hil.targets.quant import Affine, Cast, Quantizer
from npu_hil.targets.records import INTEGER, NAME_OR_CODE, NUMBER, check_fields

__all__ = [
    "AFFINE",
    "NONE",
    "RKNN_QNT_CODES",
    "RKNN_TYPES",
    "RKNN_TYPE_CODES",
    "RknnTensorAttr",
    "RockchipDecode",
    "model_input",
    "numerics",
    "output_quantizer",
    "quantizer",
    "rknn_attr_of",
]

RKNN_TYPES = {
    "int8": "INT8",
    "uint8": "UINT8",
    "float16": "FLOAT16",
    "int16": "INT16",
    "float32": "FLOAT32",
    "int32": "INT32",
    "uint16": "UINT16",
    "uint32": "UINT32",
    "int64": "INT64",
}
RKNN_TYPE_CODES = {
    0: "FLOAT32",
    1: "FLOAT16",
    2: "INT8",
    3: "UINT8",
    4: "INT16",
    5: "UINT16",
    6: "INT32",
    7: "UINT32",
    8: "INT64",
    9: "BOOL",
    10: "INT4",
    11: "BFLOAT16",
}
"""``rknn_tensor_type`` values (rknn_api.h 2.3.2, tests/data/abi/rknn_api-2.3.2.json)."""
RKNN_QNT_CODES = {0: "NONE", 1: "DFP", 2: "AFFINE_ASYMMETRIC"}
"""``rknn_tensor_qnt_type`` values (same header)."""
AFFINE = "AFFINE_ASYMMETRIC"
NONE = "NONE"
DTYPE_OF_TYPE = {name: np.dtype(dtype) for dtype, name in RKNN_TYPES.items()}


class RknnTensorAttr(TypedDict):
    """One tensor's ``rknn_tensor_attr`` as the board adapter (``rknn_native``) and the simulated
    board hand it over: the enums (fmt, type, qnt_type) by name or number."""

    index: int
    name: str
    n_dims: int
    dims: list[int]
    n_elems: int
    size: int
    fmt: str | int
    type: str | int
    qnt_type: str | int
    fl: int
    zp: int
    scale: float
    w_stride: int
    size_with_stride: int
    pass_through: int
    h_stride: int


QUANT_FIELDS = {
    "type": NAME_OR_CODE,
    "qnt_type": NAME_OR_CODE,
    "zp": INTEGER,
    "scale": NUMBER,
    "pass_through": INTEGER,
}
"""The fields the quantization model reads (the layout reader checks the geometry's own)."""


def rknn_attr_of(reported: Mapping[str, object]) -> RknnTensorAttr:
    """``reported`` (a record the harness hands the unit), its quantization fields checked."""
    check_fields("rknn_tensor_attr", reported, QUANT_FIELDS)
    return cast(RknnTensorAttr, reported)


def quantizer(attributes: Mapping[str, object]) -> Quantizer:
    """How the tensor's values relate to floats, from its ``rknn_tensor_attr``."""
    attr = rknn_attr_of(attributes)
    dtype = DTYPE_OF_TYPE.get(str(attr.get("type")), np.dtype("int8"))
    if attr.get("qnt_type") == AFFINE:
        return Affine(int(attr["zp"]), float(attr["scale"]), np.dtype("int8"))
    return Cast(dtype if dtype.kind == "f" else np.dtype("float16"))


def model_input(attributes: Mapping[str, object], held: np.ndarray) -> np.ndarray:
    """What the model computes on for an input held as ``held`` (its logical values).

    Pass-through bytes are the model's own quantized input: dequantized. Otherwise the runtime
    converts the declared values (mean 0, scale 1) into the first layer's type: quantized with
    the model's zp/scale (int8 models) or rounded to float16.
    """
    quant = quantizer(attributes)
    if isinstance(quant, Affine):
        if attributes.get("pass_through"):
            dequantized = quant.dequantize(held)
        else:
            dequantized = quant.dequantize(quant.quantize(held))  # converted there if need be
        return dequantized.astype(np.float32)
    float16: np.ndarray = held.astype(np.float16).astype(np.float32)
    return float16


output_quantizer = quantizer


def numerics(inputs: Sequence[Mapping[str, object]]) -> str:
    """int8 through the graph for a quantized model (its inputs are AFFINE_ASYMMETRIC), float16
    otherwise: what the simulated board computes (``RockchipSim.numerics``)."""
    if any(rknn_attr_of(attrs).get("qnt_type") == AFFINE for attrs in inputs):
        return "int8"
    return "float16"


class RockchipDecode:
    """A real board's stored values in float, by the reported ``qnt_type``: ``AFFINE_ASYMMETRIC``
    ``x = (q - zp) * scale``; ``DFP`` ``x = q / 2**fl``; ``NONE`` a cast."""

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
