"""The two ways to run an RKNN model, as the cross-API check compares them: zero-copy
(``rknn_native``: the native bytes with their ``rknn_tensor_attr``) and the normal API
(``rknnlite``: ``rknn_outputs_get`` hands back float32, NCHW for a 4-D tensor, a documented
conversion, so only its shape is compared as an attribute and its values against the zero-copy
buffer decoded with its ``zp``/``scale``). docs/model-developer/failures.md, "Two API paths"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from npu_hil.targets.rockchip.reported import RKNN_FMT_CODES, RockchipReport
from npu_hil.targets.unit import ApiPath, PathAttributes, PathTensor

__all__ = ["API_PATHS"]


def native_attributes(reported: Mapping[str, Any]) -> PathAttributes:
    """``rknn_tensor_attr`` under the shared names (what zero-copy reports of the tensor)."""
    out: PathAttributes = {}
    if "type" in reported:
        out["dtype"] = RockchipReport().dtype("", reported).name
    if "fmt" in reported:
        fmt = reported["fmt"]
        out["layout"] = RKNN_FMT_CODES.get(fmt, str(fmt)) if isinstance(fmt, int) else str(fmt)
    if "zp" in reported:
        out["zero_point"] = reported["zp"]
    if "scale" in reported:
        out["scale"] = reported["scale"]
    if "size" in reported:
        out["size"] = reported["size"]
    return out


def read_normal(
    name: str, data: np.ndarray, reported: Mapping[str, Any], shape: tuple[int, ...]
) -> PathTensor:
    """An RKNNLite output (``dtype``, ``shape``: the converted array) as the model's tensor."""
    try:
        dtype = np.dtype(str(reported["dtype"]))
        dims = tuple(int(d) for d in reported["shape"])
    except (KeyError, TypeError, ValueError):
        return PathTensor(None, {}, f"the normal API reported no dtype/shape: {dict(reported)}")
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    count = int(np.prod(dims))
    if raw.size != count * dtype.itemsize:
        return PathTensor(
            None,
            {"shape": list(dims)},
            f"{raw.size} bytes for a {list(dims)} {dtype.name} array ({count * dtype.itemsize})",
        )
    values = raw.view(dtype).reshape(dims)
    if dims != tuple(shape) and count == int(np.prod(shape)):
        values = values.reshape(shape)  # rank folded the way rknn_outputs_get returns it
    return PathTensor(values, {"shape": list(values.shape)})


API_PATHS = (
    ApiPath(
        adapter="rknn_native",
        api="zero-copy (rknn_create_mem / rknn_set_io_mem)",
        native=True,
        attributes=native_attributes,
    ),
    ApiPath(
        adapter="rknnlite",
        api="normal API (RKNNLite.inference: rknn_inputs_set / rknn_outputs_get)",
        native=False,
        read=read_normal,
    ),
)
