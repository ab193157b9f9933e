"""The codec layout of a tensor as a runtime reported it, so the host unpacks with what the
device says (DESIGN: predictions vs what the device says).

    layout = layout_from_report("rk3588", "output", attr)     # attr: rknn_tensor_attr fields
    tensor = layout.unpack(device_bytes)

Per vendor, from the runtime's own field names:

- RKNN ``rknn_tensor_attr`` (enum fields as the runtime's numbers or as names): ``fmt`` picks the
  layout (NHWC, NC1HWC2, NCHW, UNDEFINED); ``dims`` (cut to ``n_dims``) gives the native dims,
  NC1HWC2 ones flattened or not (``[N, C1, 1, ceil4(H*W), C2]``: element (h, w) at plane offset
  h*W + w, as the vendor's loops read it); ``w_stride`` the input row; ``size_with_stride``
  (inputs) or ``size`` (outputs) the buffer length, refused when smaller than the dims reach.
  An NC1HWC2 report needs the tensor's shape (its ``n_elems`` counts padding).
- Horizon ``hbDNNTensorProperties``: ``strided`` with ``stride`` (or ``alignedShape`` where the
  strides are not given) and ``alignedByteSize``; ``NV12`` / ``Y`` frames (tensorType) with the
  row stride read off ``alignedByteSize`` (their reported stride is -1 or 0: dynamic).
- KL730 node descriptor: ``data_layout`` and ``stride_npu``, logical ``shape``.

The logical shape comes from the report where it determines it; pass ``shape`` where it does not
(an NC1HWC2 tensor reported without ``n_elems``). :func:`predicted_layout` builds the codec's own
prediction for the same tensor (same layout, shape and dtype, no device geometry), the other side
of :func:`harness.diff.attributes.diff_attributes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from math import prod
from typing import Any

import numpy as np

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.codec.params import int_tuple, one_int
from npu_hil.harness.codec.registry import get_layout
from npu_hil.harness.errors import LayoutError
from npu_hil.targets import horizon, kl730, rockchip
from npu_hil.targets.rockchip_layouts import PARAMS as RKNN_PARAMS
from npu_hil.targets.rockchip_layouts import RKNN_TYPE_CODES, RKNN_TYPES

RKNN_FMTS = {"NCHW": "NCHW", "NHWC": "NHWC", "NC1HWC2": "NC1HWC2", "UNDEFINED": "UNDEFINE"}
RKNN_FMT_CODES = {0: "NCHW", 1: "NHWC", 2: "NC1HWC2", 3: "UNDEFINED"}
"""``rknn_tensor_format`` (spec/vendor-runtimes.md: NCHW=0, NHWC=1, NC1HWC2=2, UNDEFINED=3)."""
RKNN_DTYPES = {name: np.dtype(dtype) for dtype, name in RKNN_TYPES.items()}

HORIZON_TYPE_CODES = {
    0: "Y", 1: "NV12", 2: "NV12_SEPARATE", 3: "YUV444", 4: "RGB", 5: "BGR", 6: "S4", 7: "U4",
    8: "S8", 9: "U8", 10: "F16", 11: "S16", 12: "U16", 13: "F32", 14: "S32", 15: "U32",
    16: "F64", 17: "S64", 18: "U64",
}  # fmt: skip
"""``hbDNNDataType`` of the X3/X5 hb_dnn.h (libdnn 1.18.6 / 1.24.5, tests/data/abi)."""
HORIZON_TYPE_CODES_S100 = {
    0: "S4", 1: "U4", 2: "S8", 3: "U8", 4: "F16", 5: "S16", 6: "U16", 7: "F32", 8: "S32",
    9: "U32", 10: "F64", 11: "S64", 12: "U64", 13: "BOOL8",
}  # fmt: skip
"""``hbDNNDataType`` of the S100 hb_dnn.h (UCP 3.13.6): tensor types only, S4 = 0."""
HORIZON_LAYOUT_CODES = {0: "NHWC", 2: "NCHW"}
HORIZON_DTYPES = {name: np.dtype(dtype) for dtype, name in horizon.TENSOR_TYPES.items()}
HORIZON_IMAGES = ("NV12", "NV12_SEPARATE", "Y")
"""Image tensor types; NV12_SEPARATE is NV12 in two memories (Y, then UV), read back as one."""
HORIZON_ALIGNED_SHAPE_TARGETS = ("rdk-x3", "rdk-x5")
"""Targets whose hb_dnn.h has alignedShape and tensorLayout: their documentation describes the
aligned data by alignedShape, and their NV12/Y model inputs report stride 0."""
KL730_PREFIX = "KP_MODEL_TENSOR_DATA_LAYOUT_"


def layout_from_report(
    target: str,
    role: str,
    attributes: Mapping[str, Any],
    dtype: Any = None,
    *,
    shape: tuple[int, ...] | list[int] | None = None,
) -> BlockedLayout:
    """The layout a runtime's report describes, built with the device's own geometry."""
    return _build(target, role, attributes, dtype, shape, reported=True, params={})


def predicted_layout(
    target: str,
    role: str,
    attributes: Mapping[str, Any],
    dtype: Any = None,
    *,
    shape: tuple[int, ...] | list[int] | None = None,
    **params: Any,
) -> BlockedLayout:
    """The codec's prediction for the tensor the report describes: its layout, shape and dtype,
    but the strides, sizes and blocks from the seed tables. ``params`` are the model's knobs
    the report does not carry (RKNN ``last_op``, ``first_layer``)."""
    return _build(target, role, attributes, dtype, shape, reported=False, params=params)


def dtype_from_report(target: str, attributes: Mapping[str, Any]) -> np.dtype:
    """The element type of the reported buffer."""
    if target in rockchip.TARGETS:
        return _rknn_dtype(attributes)
    if target in horizon.TARGETS:
        kind = _horizon_type(attributes, target)
        return np.dtype("uint8") if kind in HORIZON_IMAGES else _horizon_dtype(kind)
    if target in kl730.TARGETS:
        return np.dtype("int16" if _kl730_format(attributes).bits == 16 else "int8")
    raise LayoutError(f"unknown target {target!r}")


def _build(
    target: str,
    role: str,
    attributes: Mapping[str, Any],
    dtype: Any,
    shape: tuple[int, ...] | list[int] | None,
    *,
    reported: bool,
    params: dict[str, Any],
) -> BlockedLayout:
    if not isinstance(attributes, Mapping):
        raise LayoutError(f"{target}: attributes must be a mapping, got {attributes!r}")
    kind = np.dtype(dtype) if dtype is not None else dtype_from_report(target, attributes)
    logical = tuple(int(d) for d in shape) if shape is not None else None
    if target in rockchip.TARGETS:
        return _rknn(target, role, attributes, kind, logical, reported, params)
    if target in horizon.TARGETS:
        return _horizon(target, role, attributes, kind, logical, reported, params)
    return _kl730(target, role, attributes, kind, logical, reported, params)


def _require(attributes: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in attributes:
        raise LayoutError(f"{where}: the report has no {key!r} (fields: {', '.join(attributes)})")
    return attributes[key]


# ----------------------------------------------------------------------------- RKNN


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


def _rknn_dtype(attributes: Mapping[str, Any]) -> np.dtype:
    name = _rknn_name(attributes, "type", RKNN_TYPE_CODES)
    if name not in RKNN_DTYPES:
        raise LayoutError(
            f"rknn_tensor_attr: type {attributes['type']!r} ({name}) has no codec layout "
            f"(tensor types: {', '.join(RKNN_DTYPES)})"
        )
    return RKNN_DTYPES[name]


def _rknn_fmt(attributes: Mapping[str, Any]) -> str:
    name = _rknn_name(attributes, "fmt", RKNN_FMT_CODES)
    if name == "UNDEFINE":
        name = "UNDEFINED"
    if name not in RKNN_FMTS:
        raise LayoutError(
            f"rknn_tensor_attr: fmt {attributes['fmt']!r} is not one of {', '.join(RKNN_FMTS)}"
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


def _rknn(
    target: str,
    role: str,
    attributes: Mapping[str, Any],
    dtype: np.dtype,
    shape: tuple[int, ...] | None,
    reported: bool,
    params: dict[str, Any],
) -> BlockedLayout:
    fmt = _rknn_fmt(attributes)
    dims = _rknn_dims(attributes)
    where = f"{target} {fmt} ({role})"
    size_key = "size_with_stride" if role == "input" else "size"
    extra: dict[str, Any] = {}
    if role == "input":
        extra["first_layer"] = params.pop("first_layer", _first_layer(target, attributes))
    if reported:
        extra.update(_reported_size(attributes, size_key, where))
    if fmt == "NHWC":
        if len(dims) != 4:
            raise LayoutError(f"{where}: dims must be [N, H, W, C], got {list(dims)}")
        n, h, w, c = dims
        if shape is None:
            channels = c if role == "input" else _channels_from_elems(attributes, n, h, w, where)
            shape = (n, channels, h, w)
        _check_nhwc(where, role, dims, shape)
        if role == "input":
            if reported and "w_stride" in attributes:
                # 0 is the runtime's "equal to the width", which the codec reads the same way.
                extra["w_stride"] = one_int(where, "w_stride", attributes["w_stride"])
            return get_layout(target, "NHWC", shape, dtype, role=role, **extra, **params)
        if reported:
            extra["native_dims"] = list(dims)
        return get_layout(target, "NHWC", shape, dtype, role=role, **extra, **params)
    if fmt == "NC1HWC2":
        if len(dims) != 5:
            raise LayoutError(f"{where}: dims must be [N, C1, H, W, C2], got {list(dims)}")
        if shape is None:
            raise LayoutError(
                f"{where}: an NC1HWC2 report does not carry the logical channel count or H and "
                f"W (dims {list(dims)} may be flattened); pass the tensor's shape"
            )
        if reported:
            extra["native_dims"] = list(dims)
        return get_layout(target, "NC1HWC2", shape, dtype, role=role, **extra, **params)
    name = "NCHW" if fmt == "NCHW" and role == "output" else "UNDEFINE"
    # The codec's flat input layout takes no size: a longer device buffer shows as a length
    # finding in the diff rather than being read with a size the codec cannot check.
    accepted = {k: v for k, v in extra.items() if k in RKNN_PARAMS[(role, name)]}
    return get_layout(target, name, shape or dims, dtype, role=role, **accepted)


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


# -------------------------------------------------------------------------- Horizon


def _horizon_type(attributes: Mapping[str, Any], target: str) -> str:
    raw = _require(attributes, "tensorType", "hbDNNTensorProperties")
    if isinstance(raw, int) and not isinstance(raw, bool):
        # The two headers number the types differently (S100 has no image types).
        x3x5 = target in HORIZON_ALIGNED_SHAPE_TARGETS
        codes = HORIZON_TYPE_CODES if x3x5 else HORIZON_TYPE_CODES_S100
        if raw not in codes:
            raise LayoutError(f"{target} hbDNNTensorProperties: unknown tensorType code {raw}")
        return codes[raw]
    return str(raw).upper().removeprefix("HB_DNN_TENSOR_TYPE_").removeprefix("HB_DNN_IMG_TYPE_")


def _horizon_dtype(kind: str) -> np.dtype:
    if kind not in HORIZON_DTYPES:
        raise LayoutError(
            f"hbDNNTensorProperties: tensorType {kind} has no codec layout "
            f"(tensor types: {', '.join(HORIZON_DTYPES)}; images: {', '.join(HORIZON_IMAGES)})"
        )
    return HORIZON_DTYPES[kind]


def _horizon_layout(attributes: Mapping[str, Any]) -> str:
    raw = attributes.get("tensorLayout", "NCHW")
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = HORIZON_LAYOUT_CODES.get(raw, raw)
    name = str(raw).upper().removeprefix("HB_DNN_LAYOUT_")
    if name not in ("NCHW", "NHWC"):
        raise LayoutError(f"hbDNNTensorProperties: tensorLayout {raw!r} is not NCHW or NHWC")
    return name


def _horizon(
    target: str,
    role: str,
    attributes: Mapping[str, Any],
    dtype: np.dtype,
    shape: tuple[int, ...] | None,
    reported: bool,
    params: dict[str, Any],
) -> BlockedLayout:
    kind = _horizon_type(attributes, target)
    where = f"{target} {kind} ({role})"
    valid = int_tuple(where, "validShape", _require(attributes, "validShape", where))
    tensor_layout = _horizon_layout(attributes)
    size = one_int(where, "alignedByteSize", attributes.get("alignedByteSize", 0))
    extra: dict[str, Any] = {"aligned_byte_size": size} if reported and size > 0 else {}
    by_aligned_shape = target in HORIZON_ALIGNED_SHAPE_TARGETS
    aligned_raw = attributes.get("alignedShape") if by_aligned_shape else None
    aligned = int_tuple(where, "alignedShape", aligned_raw) if aligned_raw is not None else None
    if kind in HORIZON_IMAGES:
        if len(valid) != 4:
            raise LayoutError(f"{where}: validShape must be 4-D, got {list(valid)}")
        n, h, w = (
            (valid[0], valid[1], valid[2])
            if tensor_layout == "NHWC"
            else (valid[0], valid[2], valid[3])
        )
        rows = h if kind == "Y" else h * 3 // 2
        if shape is None:
            shape = (n, rows, w)
        if reported and aligned is not None and len(aligned) == 4:
            # X3/X5: the row pitch is alignedShape's W (their NV12/Y strides are all 0).
            row_stride = aligned[2] if tensor_layout == "NHWC" else aligned[3]
            if row_stride < w:
                raise LayoutError(
                    f"{where}: alignedShape {list(aligned)} is narrower than validShape "
                    f"{list(valid)}"
                )
            extra["stride"] = row_stride
        elif reported and size > 0:
            row_stride, rest = divmod(size, n * rows)
            if not rest and row_stride >= w:
                extra["stride"] = row_stride
        # NV12_SEPARATE holds the same bytes as NV12, Y and UV in two memories.
        name = "Y" if kind == "Y" else "NV12"
        return get_layout(target, name, shape, dtype, role=role, **extra)
    if shape is None:
        shape = valid
    extra["tensor_layout"] = tensor_layout
    if reported:
        raw_stride = attributes.get("stride")
        stride = (
            [one_int(where, "stride", s) for s in raw_stride] if raw_stride is not None else None
        )
        strided = stride is not None and all(s > 0 for s in stride)
        if aligned is not None:
            # X3/X5: the layout is validShape inside alignedShape (the documented rule); strides
            # that say otherwise are a contradiction to report, not a second opinion to pick.
            implied = list(horizon.strides_of_aligned_shape(aligned, dtype.itemsize))
            if strided and stride != implied:
                raise LayoutError(
                    f"{where}: stride {stride} contradicts alignedShape {list(aligned)} "
                    f"(contiguous strides {implied})"
                )
            extra["aligned_shape"] = list(aligned)
        elif strided:
            extra["stride"] = stride
        elif attributes.get("alignedShape") is not None:
            extra["aligned_shape"] = list(attributes["alignedShape"])
    return get_layout(target, "strided", shape, dtype, role=role, **extra, **params)


# ---------------------------------------------------------------------------- KL730


def _kl730_format(attributes: Mapping[str, Any]) -> kl730.Kl730Format:
    raw = _require(attributes, "data_layout", "kl730 node descriptor")
    if not isinstance(raw, str):
        raise LayoutError(
            f"kl730 node descriptor: data_layout {raw!r} must be a format name (the numbering "
            "drifted between SDK versions: map names, never numbers)"
        )
    name = raw.upper().removeprefix(KL730_PREFIX)
    if name not in kl730.FORMATS:
        raise LayoutError(
            f"kl730 node descriptor: unknown data_layout {raw!r}; formats: "
            f"{', '.join(kl730.FORMATS)}"
        )
    return kl730.FORMATS[name]


def _kl730(
    target: str,
    role: str,
    attributes: Mapping[str, Any],
    dtype: np.dtype,
    shape: tuple[int, ...] | None,
    reported: bool,
    params: dict[str, Any],
) -> BlockedLayout:
    fmt = _kl730_format(attributes)
    where = f"kl730 {fmt.name} ({role})"
    if shape is None:
        shape = int_tuple(where, "shape", _require(attributes, "shape", where))
    extra: dict[str, Any] = {}
    if reported and "stride_npu" in attributes:
        extra["stride_npu"] = list(attributes["stride_npu"])
    if prod(shape) < 1:
        raise LayoutError(f"{where}: shape {list(shape)} holds no element")
    return get_layout(target, fmt.name, shape, dtype, role=role, **extra, **params)
