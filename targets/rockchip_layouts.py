"""Rockchip RKNN2: the native I/O layouts, predicted from the seed's tables (targets/rockchip.py).

Logical tensors are the model's ONNX shapes (NCHW for 4-D). Layouts:

- inputs (zero-copy): ``NHWC`` whose row holds ``w_stride`` pixels, ``w_stride`` being the width
  rounded up to the input table's alignment for the platform, first-layer precision
  (``first_layer``), declared input type (the dtype) and channel count; ``NC1HWC2`` (the native
  input when C is not 1, 3 or 4); ``UNDEFINE`` (flat, any rank);
- outputs: ``NCHW``, ``NHWC`` with channels padded per the output table, ``NC1HWC2`` with its
  C2 block, channels padded to the table's multiple for the last op (``last_op`` = ``conv`` or
  ``other``) and each H·W plane padded to ``hw_align``, and ``UNDEFINE``.

Device-reported attributes override every prediction: ``w_stride``, ``size_with_stride``,
``native_dims`` ([N, C1, H, W, C2]), ``size``. A combination the tables do not list is a
LayoutError naming what is missing.
"""

from __future__ import annotations

from math import lcm, prod
from typing import Any

import numpy as np

from harness.codec.encodings import Encoding
from harness.codec.engine import BlockedLayout, Dim
from harness.codec.params import int_tuple, one_int, round_up, take_params
from harness.codec.registry import register
from harness.errors import LayoutError
from targets import rockchip

INPUT_LAYOUTS = ("NHWC", "NC1HWC2", "UNDEFINE")
OUTPUT_LAYOUTS = ("NCHW", "NHWC", "NC1HWC2", "UNDEFINE")
RKNN_TYPES = {
    "int8": "INT8",
    "uint8": "UINT8",
    "float16": "FLOAT16",
    "int16": "INT16",
    "float32": "FLOAT32",
    "int32": "INT32",
    "uint16": "UINT16",
    "uint32": "UINT32",
}
PARAMS = {
    ("input", "NHWC"): ("first_layer", "w_stride", "size_with_stride"),
    ("input", "NC1HWC2"): ("first_layer", "c2", "native_dims", "size_with_stride"),
    ("input", "UNDEFINE"): ("first_layer",),
    ("output", "NCHW"): ("size",),
    ("output", "NHWC"): ("last_op", "size"),
    ("output", "NC1HWC2"): ("last_op", "c2", "hw_align", "native_dims", "size"),
    ("output", "UNDEFINE"): ("size",),
}


def layout_names() -> tuple[str, ...]:
    return OUTPUT_LAYOUTS


def build(
    target: str,
    name: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    role: str,
    params: dict[str, Any],
) -> BlockedLayout:
    where = f"{target} {name} ({role})"
    if (role, name) not in PARAMS:
        raise LayoutError(
            f"{where}: not an RKNN {role} layout; {role} layouts are "
            f"{', '.join(INPUT_LAYOUTS if role == 'input' else OUTPUT_LAYOUTS)}"
        )
    take_params(where, params, PARAMS[(role, name)])
    if dtype.name not in RKNN_TYPES:
        raise LayoutError(f"{where}: dtype {dtype.name} is not an RKNN tensor type")
    if name != "UNDEFINE" and len(shape) != 4:
        raise LayoutError(f"{where}: {name} needs a 4-D NCHW tensor, got shape {shape}")
    builder = _input if role == "input" else _output
    return builder(target, name, where, shape, dtype, params)


def _input(
    target: str,
    name: str,
    where: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    params: dict[str, Any],
) -> BlockedLayout:
    first_layer = str(params.get("first_layer", rockchip.default_first_layer(target)))
    row = rockchip.input_row(
        target,
        first_layer=first_layer,
        rank=len(shape),
        input_type=rockchip.input_type_of(dtype.name),
    )
    table_row = (
        f"{row.platform} input row: first layer {row.first_layer}, rank "
        f"{'4' if row.rank4 else 'not 4'}, input {row.input_types_text()}"
    )
    base = {
        "first_layer": first_layer,
        "mean_scale_on": row.mean_scale_on,
        "width_rule": row.width_rule,
        "table_row": table_row,
    }
    if name == "UNDEFINE":
        return _flat(
            target,
            name,
            "input",
            shape,
            dtype,
            params,
            prod(shape) * dtype.itemsize,
            {"size": "the tensor's own size"},
            base,
        )
    if name == "NC1HWC2":
        c2, c2_source = _c2(where, target, dtype, params)
        return _nc1hwc2(
            target,
            "input",
            where,
            shape,
            dtype,
            params,
            c2,
            c2_source,
            channel_multiple=c2,
            hw_align=1,
            base=base,
        )
    n, c, h, w = shape
    align = row.width_align(c)
    predicted = round_up(w, align)
    w_stride, source = predicted, f"predicted: width aligned to {align} ({table_row})"
    if "w_stride" in params:
        given = one_int(where, "w_stride", params["w_stride"])
        w_stride, source = (given or w), "given (device-reported)"
        if w_stride < w:
            raise LayoutError(f"{where}: w_stride {w_stride} is smaller than the width {w}")
    item = dtype.itemsize
    dims = _nhwc_dims(shape, item, row_pixels=w_stride, pixel_channels=c)
    nbytes, size_source = _size(where, params, "size_with_stride", n * h * w_stride * c * item)
    return _layout(
        target,
        "NHWC",
        "input",
        shape,
        dtype,
        dims,
        nbytes,
        params,
        {"w_stride": source, "size_with_stride": size_source},
        {
            **base,
            "fmt": "NHWC",
            "dims": [n, h, w, c],
            "w_stride": w_stride,
            "predicted_w_stride": predicted,
            "width_align": align,
            "size": prod(shape) * item,
            "size_with_stride": nbytes,
        },
    )


def _output(
    target: str,
    name: str,
    where: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    params: dict[str, Any],
) -> BlockedLayout:
    precision = rockchip.precision_of(dtype.name)
    row = rockchip.output_row(target, precision=precision, rank=len(shape), layout=name)
    last_op = str(params.get("last_op", "conv"))
    if last_op not in ("conv", "other"):
        raise LayoutError(f"{where}: last_op must be 'conv' or 'other', got {last_op!r}")
    multiple = row.channel_align(last_op == "conv")
    table_row = (
        f"{row.platform} output row: {precision}, rank {'4' if row.rank4 else 'not 4'}, "
        f"{row.layouts_text()}, channels x{row.channel_align_conv} (conv) / "
        f"x{row.channel_align_other} (other), H*W x{row.hw_align}"
    )
    base = {"precision": precision, "last_op": last_op, "table_row": table_row}
    item = dtype.itemsize
    if name in ("UNDEFINE", "NCHW"):
        return _flat(
            target,
            name,
            "output",
            shape,
            dtype,
            params,
            prod(shape) * item,
            {"size": "the tensor's own size"},
            base,
        )
    if name == "NC1HWC2":
        c2, c2_source = _c2(where, target, dtype, params)
        hw_align = one_int(where, "hw_align", params.get("hw_align", row.hw_align))
        return _nc1hwc2(
            target,
            "output",
            where,
            shape,
            dtype,
            params,
            c2,
            c2_source,
            channel_multiple=lcm(multiple, c2),
            hw_align=hw_align,
            base=base,
        )
    n, c, h, w = shape
    padded_c = round_up(c, multiple)
    dims = _nhwc_dims(shape, item, row_pixels=w, pixel_channels=padded_c)
    nbytes, size_source = _size(where, params, "size", n * h * w * padded_c * item)
    return _layout(
        target,
        "NHWC",
        "output",
        shape,
        dtype,
        dims,
        nbytes,
        params,
        {
            "channels": f"predicted: padded to a multiple of {multiple} ({table_row})",
            "size": size_source,
        },
        {**base, "fmt": "NHWC", "dims": [n, h, w, padded_c], "size": nbytes},
    )


def _nhwc_dims(
    shape: tuple[int, ...], item: int, *, row_pixels: int, pixel_channels: int
) -> tuple[Dim, ...]:
    """NHWC of an NCHW tensor: each pixel holds ``pixel_channels`` slots (channels padded on
    outputs), each row ``row_pixels`` pixels (``w_stride`` on inputs)."""
    n, c, h, w = shape
    pixel = pixel_channels * item
    row = row_pixels * pixel
    return (
        Dim(0, n, h * row, 1, "n"),
        Dim(1, c, item, 1, "c"),
        Dim(2, h, row, 1, "h"),
        Dim(3, w, pixel, 1, "w"),
    )


def _nc1hwc2(
    target: str,
    role: str,
    where: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    params: dict[str, Any],
    c2: int,
    c2_source: str,
    *,
    channel_multiple: int,
    hw_align: int,
    base: dict[str, Any],
) -> BlockedLayout:
    n, c, h, w = shape
    c1 = round_up(c, channel_multiple) // c2
    native_h, native_w = h, w
    provenance = {
        "c2": c2_source,
        "c1": f"predicted: channels padded to a multiple of {channel_multiple}",
    }
    if "native_dims" in params:
        native = int_tuple(where, "native_dims", params["native_dims"], 5)
        if native[0] != n or native[1] * native[4] < c or native[2] < h or native[3] < w:
            raise LayoutError(
                f"{where}: native_dims {list(native)} cannot hold NCHW {list(shape)} "
                "(expected [N, C1, H, W, C2] with C1*C2 >= C, H and W at least the tensor's)"
            )
        _, c1, native_h, native_w, c2 = native
        provenance["c1"] = provenance["c2"] = "given (device-reported native dims)"
    if hw_align < 1:
        raise LayoutError(f"{where}: hw_align must be >= 1, got {hw_align}")
    item = dtype.itemsize
    plane = round_up(native_h * native_w, hw_align)
    dims = (
        Dim(0, n, c1 * plane * c2 * item, 1, "n"),
        Dim(1, c1, plane * c2 * item, c2, "c1"),
        Dim(1, c2, item, 1, "c2"),
        Dim(2, h, native_w * c2 * item, 1, "h"),
        Dim(3, w, c2 * item, 1, "w"),
    )
    key = "size_with_stride" if role == "input" else "size"
    nbytes, size_source = _size(where, params, key, n * c1 * plane * c2 * item)
    provenance[key] = size_source
    provenance["hw_align"] = f"H*W plane padded to a multiple of {hw_align}"
    return _layout(
        target,
        "NC1HWC2",
        role,
        shape,
        dtype,
        dims,
        nbytes,
        params,
        provenance,
        {
            **base,
            "fmt": "NC1HWC2",
            "native_dims": [n, c1, native_h, native_w, c2],
            "c2": c2,
            "hw_align": hw_align,
            key: nbytes,
        },
    )


def _flat(
    target: str,
    name: str,
    role: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    params: dict[str, Any],
    default_size: int,
    provenance: dict[str, str],
    base: dict[str, Any],
) -> BlockedLayout:
    item = dtype.itemsize
    strides = [item] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    dims = tuple(
        Dim(a, d, s, 1, f"d{a}") for a, (d, s) in enumerate(zip(shape, strides, strict=True))
    )
    key = "size_with_stride" if role == "input" else "size"
    nbytes, source = (
        _size(f"{target} {name}", params, key, default_size)
        if key in params
        else (default_size, provenance["size"])
    )
    return _layout(
        target,
        name,
        role,
        shape,
        dtype,
        dims,
        nbytes,
        params,
        {key: source},
        {**base, "fmt": name, "dims": list(shape), key: nbytes},
    )


def _c2(where: str, target: str, dtype: np.dtype, params: dict[str, Any]) -> tuple[int, str]:
    if "c2" in params:
        c2 = one_int(where, "c2", params["c2"])
        if c2 < 1:
            raise LayoutError(f"{where}: c2 must be >= 1, got {c2}")
        return c2, "given"
    if dtype.name not in ("int8", "uint8", "float16"):
        raise LayoutError(
            f"{where}: the C2 block is known for 8-bit and float16 data only, got "
            f"{dtype.name}; give the device's c2 or native_dims"
        )
    c2, source = rockchip.c2_default(target, rockchip.precision_of(dtype.name))
    return c2, f"predicted: {source}"


def _size(where: str, params: dict[str, Any], key: str, default: int) -> tuple[int, str]:
    if key not in params:
        return default, "predicted from the layout"
    size = one_int(where, key, params[key])
    if size < default:
        raise LayoutError(
            f"{where}: {key} {size} is smaller than the {default} bytes the layout reaches"
        )
    return size, "given (device-reported)"


def _layout(
    target: str,
    name: str,
    role: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    dims: tuple[Dim, ...],
    nbytes: int,
    params: dict[str, Any],
    provenance: dict[str, str],
    attributes: dict[str, Any],
) -> BlockedLayout:
    attributes = {**attributes, "type": RKNN_TYPES[dtype.name], "n_elems": prod(shape)}
    return BlockedLayout(
        target=target,
        name=name,
        role=role,
        shape=shape,
        dtype=dtype,
        dims=dims,
        nbytes=nbytes,
        encoding=Encoding("raw", dtype),
        axis_names=("n", "c", "h", "w") if len(shape) == 4 else (),
        params=dict(params),
        provenance=provenance,
        attributes=attributes,
    )


register(rockchip.TARGETS, build, layout_names)
