"""``rknn_tensor_attr``: the record an RKNN runtime reports of each tensor, as the board adapter
(``rknn_native``) and the simulated board hand it over (rknn_api.h's field names)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from typing_extensions import TypedDict

from npu_hil.targets.records import INTEGER, NAME_OR_CODE, NUMBER, check_fields

__all__ = ["RknnTensorAttr", "rknn_attr_of"]


class RknnTensorAttr(TypedDict):
    """One tensor's ``rknn_tensor_attr``: the enums (fmt, type, qnt_type) by name or number."""

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
