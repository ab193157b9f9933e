"""The KL730 node descriptor (what Kneron PLUS reports of a raw fixed-point node) and how its
values relate to floats: the quantization model the oracle (``npu_hil.harness.expect``) and the
simulator share, and the decoder of a real board's values (``npu_hil.harness.farm.decode``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np
from typing_extensions import NotRequired, TypedDict

from npu_hil.harness.errors import LayoutError
from npu_hil.targets.kneron import kl730
from npu_hil.targets.quant import FixedPoint, float_graph, per_axis
from npu_hil.targets.records import INTEGER, SEQUENCE, check_fields

__all__ = [
    "CHANNEL_AXIS",
    "KneronDecode",
    "NodeDescriptor",
    "model_input",
    "node_descriptor_of",
    "numerics",
    "output_quantizer",
    "quantizer",
]

CHANNEL_AXIS = 1


class NodeDescriptor(TypedDict):
    """One node, as the board adapter (``kneron``) and the simulated board hand it over: the
    board adds the SDK's raw fields (codes, versions, NPU shape) beside them."""

    index: int
    name: str
    data_layout: str
    data_layout_code: NotRequired[int]
    shape: list[int]
    stride_npu: list[int] | None
    stride_onnx: list[int] | None
    quantized_axis: int | None
    radix: list[int]
    scale: list[float | None]
    scale_dtype: NotRequired[list[str]]
    num_data: NotRequired[int]
    shape_info_version: NotRequired[int]
    inputs_read_back: NotRequired[bool]
    shape_npu: NotRequired[list[int] | None]
    axis_permutation_onnx_to_npu: NotRequired[list[int] | None]


QUANT_FIELDS = {
    "data_layout": (str,),
    "radix": SEQUENCE,
    "scale": SEQUENCE,
    "quantized_axis": (*INTEGER, type(None)),
}
"""The fields the quantization model reads (the layout reader checks the geometry's own)."""


def node_descriptor_of(reported: Mapping[str, object]) -> NodeDescriptor:
    """``reported`` (a record the harness hands the unit), its quantization fields checked."""
    check_fields("kl730 node descriptor", reported, QUANT_FIELDS)
    return cast(NodeDescriptor, reported)


def quantizer(attributes: Mapping[str, object]) -> FixedPoint:
    """Fixed point from a node descriptor (per channel when it lists several radixes)."""
    descriptor = node_descriptor_of(attributes)
    fmt = kl730.FORMATS[str(descriptor["data_layout"])]
    radix = tuple(int(r) for r in descriptor["radix"])
    scale = tuple(_scale(s) for s in descriptor["scale"])
    axis = _axis(descriptor.get("quantized_axis", CHANNEL_AXIS)) if len(radix) > 1 else None
    bits = 15 if fmt.quirk_15bit else 8 * fmt.dtype.itemsize
    return FixedPoint(radix, scale, axis, fmt.dtype, bits)


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


output_quantizer = quantizer
numerics = float_graph


class KneronDecode:
    """A real board's stored values in float, by the reported ``radix``, ``scale`` and
    ``quantized_axis``: ``x = q / (scale * 2**radix)``, one pair per tensor or per channel."""

    keys = "radix and scale"

    def claims(self, reported: Mapping[str, Any]) -> bool:
        return "radix" in reported and "scale" in reported

    def dequantize(self, q: np.ndarray, reported: Mapping[str, Any], what: str) -> np.ndarray:
        axis = int(reported.get("quantized_axis", 1))
        radix = per_axis(reported["radix"], axis, q.ndim, what)
        scale = per_axis(reported["scale"], axis, q.ndim, what)
        out: np.ndarray = q / (scale * 2.0**radix)
        return out
