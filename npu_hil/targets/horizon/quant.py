"""Horizon's tensor record (``hbDNNTensorProperties``, hb_dnn.h's field names) and how its values
relate to floats: the quantization model the oracle (``npu_hil.harness.expect``) and the
simulator share, the planes a model sees of an image input, and the decoder of a real board's
values (``npu_hil.harness.farm.decode``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np
from typing_extensions import NotRequired, TypedDict

from npu_hil.harness.errors import DeviceError
from npu_hil.targets.horizon.layouts import DTYPE_OF_TYPE
from npu_hil.targets.quant import Cast, HorizonScale, HorizonShift, Quantizer, float_graph, per_axis
from npu_hil.targets.records import INTEGER, NAME_OR_CODE, SEQUENCE, check_fields

__all__ = [
    "HorizonDecode",
    "TensorProperties",
    "image_shape",
    "model_input",
    "numerics",
    "nv12_planes",
    "output_quantizer",
    "properties_of",
    "quantizer",
    "y_plane",
]


class TensorProperties(TypedDict):
    """One tensor's properties, as the board adapter (``hobot_native``) and the simulated board
    hand them over: alignedShape and tensorLayout on the X3/X5 headers only, shift where the
    header has it, memories (the Y and UV byte counts) for an NV12_SEPARATE input; the enums
    (tensorType, quantiType) by name or number."""

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


def quantizer(attributes: Mapping[str, object]) -> Quantizer:
    """How the tensor's values relate to floats, from its properties."""
    properties = properties_of(attributes)
    kind = properties.get("quantiType", "NONE")
    tensor_type = str(properties.get("tensorType"))
    dtype = DTYPE_OF_TYPE.get(tensor_type, np.dtype("uint8"))
    if kind == "SCALE":
        scales = tuple(float(s) for s in properties["scale"])
        zeros = tuple(int(z) for z in properties.get("zeroPoint") or [0] * len(scales))
        axis = int(properties.get("quantizeAxis", 0)) if len(scales) > 1 else None
        return HorizonScale(scales, zeros, axis, dtype)
    if kind == "SHIFT":
        shifts = tuple(int(s) for s in properties["shift"])
        axis = int(properties.get("quantizeAxis", 0)) if len(shifts) > 1 else None
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
    dequantized: np.ndarray = quantizer(properties).dequantize(held).astype(np.float32)
    return dequantized


output_quantizer = quantizer
numerics = float_graph


# The BPU converts an NV12 frame inside the compiled model (the toolchain's colour conversion);
# the sim feeds the model the YUV planes at full resolution, chroma repeated 2x2 (nearest
# neighbour), and leaves colour conversion to the model, so the numbers are the frame's own.


def nv12_planes(frame: np.ndarray) -> np.ndarray:
    """An NV12 frame (N, 3H/2, W) or (3H/2, W), uint8 → (N, 3, H, W) float32 Y, U, V planes."""
    frames = frame if frame.ndim == 3 else frame[np.newaxis]
    n, rows, width = frames.shape
    height = rows * 2 // 3
    luma = frames[:, :height, :]
    chroma = frames[:, height:, :].reshape(n, height // 2, width // 2, 2)
    u = chroma[..., 0].repeat(2, axis=1).repeat(2, axis=2)
    v = chroma[..., 1].repeat(2, axis=1).repeat(2, axis=2)
    planes: np.ndarray = np.stack([luma, u, v], axis=1).astype(np.float32)
    return planes


def y_plane(frame: np.ndarray) -> np.ndarray:
    """A Y frame (N, H, W) or (H, W), uint8 → (N, 1, H, W) float32."""
    frames = frame if frame.ndim == 3 else frame[np.newaxis]
    plane: np.ndarray = frames[:, np.newaxis].astype(np.float32)
    return plane


def image_shape(layout: str, model_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The frame shape an NV12 or Y input of a model input (N, C, H, W) has."""
    n, _, h, w = model_shape
    return (n, h * 3 // 2, w) if layout == "NV12" else (n, h, w)


class HorizonDecode:
    """A real board's stored values in float, by the reported ``quantiType``: ``SCALE``
    ``x = (q - zeroPoint) * scale`` per ``quantizeAxis`` (one value per tensor, or one per
    channel); ``SHIFT`` ``x = q / 2**shift``; ``NONE`` a cast."""

    keys = "quantiType"

    def claims(self, reported: Mapping[str, Any]) -> bool:
        return "quantiType" in reported

    def dequantize(self, q: np.ndarray, reported: Mapping[str, Any], what: str) -> np.ndarray:
        kind = str(reported["quantiType"])
        axis = int(reported.get("quantizeAxis", 0))
        if kind == "SCALE":
            scale = per_axis(reported["scale"], axis, q.ndim, what)
            zeros = reported.get("zeroPoint") or [0]
            out: np.ndarray = (q - per_axis(zeros, axis, q.ndim, what)) * scale
            return out
        if kind == "SHIFT":
            shifted: np.ndarray = q / 2.0 ** per_axis(reported["shift"], axis, q.ndim, what)
            return shifted
        if kind == "NONE":
            return q
        raise DeviceError(f"{what}: unknown Horizon quantiType {kind!r}")
