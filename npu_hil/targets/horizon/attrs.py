"""``hbDNNTensorProperties``: the record libdnn reports of each tensor, as the board adapter
(``hobot_native``) and the simulated board hand it over (hb_dnn.h's field names)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from typing_extensions import NotRequired, TypedDict

from npu_hil.targets.records import INTEGER, NAME_OR_CODE, SEQUENCE, check_fields

__all__ = ["TensorProperties", "properties_of"]


class TensorProperties(TypedDict):
    """One tensor's properties: alignedShape and tensorLayout on the X3/X5 headers only, shift
    where the header has it, memories (the Y and UV byte counts) for an NV12_SEPARATE input;
    the enums (tensorType, quantiType) by name or number."""

    index: NotRequired[int]
    name: NotRequired[str]
    validShape: list[int]
    alignedShape: NotRequired[list[int]]
    tensorLayout: NotRequired[str | int]
    tensorType: str | int
    quantiType: str | int
    shift: NotRequired[list[int]]
    scale: list[float]
    zeroPoint: list[int] | None
    quantizeAxis: int
    alignedByteSize: int
    stride: list[int]
    memories: NotRequired[list[int]]


QUANT_FIELDS = {
    "tensorType": NAME_OR_CODE,
    "quantiType": NAME_OR_CODE,
    "scale": SEQUENCE,
    "zeroPoint": (*SEQUENCE, type(None)),
    "shift": SEQUENCE,
    "quantizeAxis": INTEGER,
}
"""The fields the quantization model reads (the layout reader checks the geometry's own)."""


def properties_of(reported: Mapping[str, object]) -> TensorProperties:
    """``reported`` (a record the harness hands the unit), its quantization fields checked."""
    check_fields("hbDNNTensorProperties", reported, QUANT_FIELDS)
    return cast(TensorProperties, reported)
