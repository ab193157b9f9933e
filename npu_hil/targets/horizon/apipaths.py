"""The two ways to run a Horizon BPU model as the cross-API check compares them: zero-copy
(``hobot_native``: libdnn through ctypes, ``hbSysAllocCachedMem`` / ``hbDNNInfer`` on memories the
adapter allocates, the aligned bytes read with ``hbDNNTensorProperties``' strides and quantization)
and ``hobot_dnn`` (``hobot``: docs/model-developer/failures.md, "Two API paths that disagree")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from npu_hil.targets.horizon.layouts import TENSOR_TYPES
from npu_hil.targets.unit import ApiPath, PathAttributes, PathTensor

__all__ = ["API_PATHS"]

NUMPY_OF = {code: name for name, code in TENSOR_TYPES.items()}
"""libdnn's tensorType names (S8, F32 ...) → numpy names."""
PREFIX = "HB_DNN_TENSOR_TYPE_"


def _dtype_name(value: Any) -> str:
    name = str(value).upper().removeprefix(PREFIX)
    return NUMPY_OF.get(name, str(value).lower())


def native_attributes(reported: Mapping[str, Any]) -> PathAttributes:
    """``hbDNNTensorProperties`` under the shared names."""
    out: PathAttributes = {}
    if "tensorType" in reported:
        out["dtype"] = _dtype_name(reported["tensorType"])
    if reported.get("tensorLayout") is not None:
        out["layout"] = reported["tensorLayout"]
    if reported.get("validShape") is not None:
        out["valid_shape"] = reported["validShape"]
    if reported.get("alignedShape") is not None:
        out["aligned_shape"] = reported["alignedShape"]
    if reported.get("scale") is not None:
        out["scale"] = reported["scale"]
    return out


def read_hobot(
    name: str, data: np.ndarray, reported: Mapping[str, Any], shape: tuple[int, ...]
) -> PathTensor:
    """A ``pyeasy_dnn`` output (the hobot adapter's record) as the model's tensor."""
    attributes: dict[str, Any] = {}
    if reported.get("tensor_type") is not None:
        attributes["dtype"] = _dtype_name(reported["tensor_type"])
    for key, shared in (
        ("layout", "layout"),
        ("validShape", "valid_shape"),
        ("alignedShape", "aligned_shape"),
        ("scale_data", "scale"),
    ):
        value = reported.get(key)
        if value is not None and value != []:
            attributes[shared] = value
    if reported.get("buffer_faithful") is not True:
        caveats = "; ".join(str(c) for c in reported.get("caveats") or ()) or "unknown padding"
        return PathTensor(None, attributes, f"hobot_dnn's .buffer is not the tensor: {caveats}")
    dims = [int(d) for d in (reported.get("validShape") or reported.get("shape") or ())]
    try:
        dtype = np.dtype(attributes.get("dtype", ""))
    except TypeError:
        return PathTensor(None, attributes, f"tensor_type {reported.get('tensor_type')!r}")
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    if not dims or raw.size != int(np.prod(dims)) * dtype.itemsize:
        return PathTensor(None, attributes, f"{raw.size} bytes for validShape {dims} {dtype}")
    values = raw.view(dtype).reshape(dims)
    if str(reported.get("layout", "")).upper() == "NHWC" and values.ndim == 4:
        values = values.transpose(0, 3, 1, 2)  # the model's tensor is NCHW
    if tuple(values.shape) != tuple(shape) and values.size == int(np.prod(shape)):
        values = values.reshape(shape)
    return PathTensor(np.ascontiguousarray(values), attributes)


API_PATHS = (
    ApiPath(
        adapter="hobot_native",
        api="zero-copy (libdnn hbDNNInfer on memories the adapter allocates)",
        native=True,
        attributes=native_attributes,
    ),
    ApiPath(
        adapter="hobot",
        api="hobot_dnn (pyeasy_dnn Model.forward)",
        native=False,
        read=read_hobot,
    ),
)
