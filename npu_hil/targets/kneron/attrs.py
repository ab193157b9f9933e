"""The KL730 node descriptor: what Kneron PLUS reports of a raw fixed-point node, as the board
adapter (``kneron``) and the simulated board hand it over."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from typing_extensions import NotRequired, TypedDict

from npu_hil.targets.records import INTEGER, SEQUENCE, check_fields

__all__ = ["NodeDescriptor", "node_descriptor_of"]


class NodeDescriptor(TypedDict):
    """One node: the board adds the SDK's raw fields (codes, versions, NPU shape) beside them."""

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
