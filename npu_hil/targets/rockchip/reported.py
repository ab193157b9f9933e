"""RKNN ``rknn_tensor_attr`` read into a codec layout, enum fields as the runtime's numbers or as
names: ``fmt`` picks the layout, ``dims`` (cut to ``n_dims``) the native dims (NC1HWC2 flattened
or not), ``w_stride`` the input row, ``size_with_stride`` / ``size`` the buffer length (refused
when smaller than the dims reach). An NC1HWC2 report needs the tensor's shape (its ``n_elems``
counts padding)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.codec.params import int_tuple, one_int
from npu_hil.harness.codec.registry import get_layout
from npu_hil.harness.codec.reported import require_field as _require
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.rockchip import tables as rockchip
from npu_hil.targets.rockchip.layouts import PARAMS as RKNN_PARAMS
from npu_hil.targets.rockchip.quant import DTYPE_OF_TYPE, RKNN_TYPE_CODES

RKNN_FMT_CODES = {0: "NCHW", 1: "NHWC", 2: "NC1HWC2", 3: "UNDEFINED"}
"""``rknn_tensor_format`` (spec/vendor-runtimes.md: NCHW=0, NHWC=1, NC1HWC2=2, UNDEFINED=3)."""


class RockchipReport:
    """The :class:`~npu_hil.harness.codec.registry.ReportReader` of the RKNN targets."""

    def dtype(self, target: str, attributes: Mapping[str, Any]) -> np.dtype:
        name = _rknn_name(attributes, "type", RKNN_TYPE_CODES)
        if name not in DTYPE_OF_TYPE:
            raise LayoutError(
                f"rknn_tensor_attr: type {attributes['type']!r} ({name}) has no codec layout "
                f"(tensor types: {', '.join(DTYPE_OF_TYPE)})"
            )
        return DTYPE_OF_TYPE[name]

    def layout(
        self,
        target: str,
        role: str,
        attributes: Mapping[str, Any],
        dtype: np.dtype,
        shape: tuple[int, ...] | None,
        *,
        reported: bool,
        params: Mapping[str, object],
    ) -> BlockedLayout:
        fmt = _rknn_fmt(attributes)
        dims = _rknn_dims(attributes)
        where = f"{target} {fmt} ({role})"
        size_key = "size_with_stride" if role == "input" else "size"
        extra: dict[str, Any] = {}
        if role == "input":
            extra["first_layer"] = params.get("first_layer", _first_layer(target, attributes))
            params = {k: v for k, v in params.items() if k != "first_layer"}
        if reported:
            extra.update(_reported_size(attributes, size_key, where))
        if fmt == "NHWC":
            if len(dims) != 4:
                raise LayoutError(f"{where}: dims must be [N, H, W, C], got {list(dims)}")
            n, h, w, c = dims
            if shape is None:
                channels = (
                    c if role == "input" else _channels_from_elems(attributes, n, h, w, where)
                )
                shape = (n, channels, h, w)
            _check_nhwc(where, role, dims, shape)
            if role == "input" and reported and "w_stride" in attributes:
                # 0 is the runtime's "equal to the width", which the codec reads the same way.
                extra["w_stride"] = one_int(where, "w_stride", attributes["w_stride"])
        elif fmt == "NC1HWC2":
            if len(dims) != 5:
                raise LayoutError(f"{where}: dims must be [N, C1, H, W, C2], got {list(dims)}")
            if shape is None:
                raise LayoutError(
                    f"{where}: an NC1HWC2 report does not carry the logical channel count or H and "
                    f"W (dims {list(dims)} may be flattened); pass the tensor's shape"
                )
        else:
            name = "NCHW" if fmt == "NCHW" and role == "output" else "UNDEFINE"
            # The codec's flat input layout takes no size: a longer device buffer shows as a
            # length finding in the diff rather than being read with a size it cannot check.
            accepted = {k: v for k, v in extra.items() if k in RKNN_PARAMS[(role, name)]}
            return get_layout(target, name, shape or dims, dtype, role=role, **accepted)
        if reported and (fmt == "NC1HWC2" or role == "output"):
            extra["native_dims"] = list(dims)
        return get_layout(target, fmt, shape, dtype, role=role, **extra, **params)


def _rknn_name(attributes: Mapping[str, Any], key: str, codes: Mapping[int, str]) -> str:
    """A ``rknn_tensor_attr`` enum field as its name: the runtime gives numbers, the fakes and
    the simulator names (``RKNN_TENSOR_INT8``, ``INT8``)."""
    raw = _require(attributes, key, "rknn_tensor_attr")
    if isinstance(raw, int | np.integer) and not isinstance(raw, bool):
        if int(raw) not in codes:
            raise LayoutError(
                f"rknn_tensor_attr: {key} {int(raw)} is not one of "
                f"{', '.join(f'{c} ({n})' for c, n in codes.items())}"
            )
        return codes[int(raw)]
    return str(raw).upper().removeprefix("RKNN_TENSOR_QNT_").removeprefix("RKNN_TENSOR_")


def _rknn_fmt(attributes: Mapping[str, Any]) -> str:
    name = _rknn_name(attributes, "fmt", RKNN_FMT_CODES)
    if name == "UNDEFINE":
        name = "UNDEFINED"
    if name not in RKNN_FMT_CODES.values():
        raise LayoutError(
            f"rknn_tensor_attr: fmt {attributes['fmt']!r} is not one of "
            f"{', '.join(RKNN_FMT_CODES.values())}"
        )
    return name


def _rknn_dims(attributes: Mapping[str, Any]) -> tuple[int, ...]:
    dims = int_tuple("rknn_tensor_attr", "dims", _require(attributes, "dims", "rknn_tensor_attr"))
    if "n_dims" in attributes:
        n_dims = one_int("rknn_tensor_attr", "n_dims", attributes["n_dims"])
        if not 0 < n_dims <= len(dims):
            raise LayoutError(
                f"rknn_tensor_attr: n_dims {n_dims} does not fit dims {list(dims)} (1 to "
                f"{len(dims)})"
            )
        dims = dims[:n_dims]
    if any(d < 1 for d in dims):
        raise LayoutError(f"rknn_tensor_attr: dims {list(dims)} must all be >= 1")
    return dims


def _first_layer(target: str, attributes: Mapping[str, Any]) -> str:
    """float16 for a float16 model's input (its declared type is FLOAT16: the runtime reports
    AFFINE quantization even there, so qnt_type says nothing), int8 where the platform has int8
    first layers, else the platform's only first layer (RK2118)."""
    firsts = {row.first_layer for row in rockchip.input_rows(target)}
    declared = _rknn_name(attributes, "type", RKNN_TYPE_CODES) if "type" in attributes else ""
    if "float16" in firsts and declared == "FLOAT16":
        return "float16"
    return rockchip.default_first_layer(target)


def _reported_size(attributes: Mapping[str, Any], key: str, where: str) -> dict[str, int]:
    size = attributes.get(key)
    if size is None:
        return {}
    value = one_int(where, key, size)
    if value < 0:
        raise LayoutError(f"{where}: {key} {value} is negative")
    return {key: value} if value > 0 else {}


def _channels_from_elems(attributes: Mapping[str, Any], n: int, h: int, w: int, where: str) -> int:
    if "n_elems" not in attributes:
        raise LayoutError(f"{where}: the channel count needs n_elems or an explicit shape")
    elems = one_int(where, "n_elems", attributes["n_elems"])
    if elems % (n * h * w):
        raise LayoutError(f"{where}: n_elems {elems} is not a multiple of N*H*W = {n * h * w}")
    return elems // (n * h * w)


def _check_nhwc(where: str, role: str, dims: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """The report's [N, H, W, C] must describe the tensor: a runtime that reports four channels
    for a 17-channel input (RK2118, deviation contradictory-reports) is refused, not misread."""
    if len(shape) != 4:
        raise LayoutError(f"{where}: NHWC dims {list(dims)} for a {len(shape)}-D tensor {shape}")
    n, c, h, w = shape
    channels_ok = dims[3] == c if role == "input" else dims[3] >= c
    if [dims[0], dims[1], dims[2]] != [n, h, w] or not channels_ok:
        want = f"[{n}, {h}, {w}, {c if role == 'input' else f'>= {c}'}]"
        raise LayoutError(
            f"{where}: dims {list(dims)} cannot hold NCHW {list(shape)} (expected {want})"
        )
