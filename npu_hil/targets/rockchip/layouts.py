"""Rockchip RKNN2: the native I/O layouts, predicted from the seed's tables (:mod:`.tables`) and,
where Rockchip's own software does otherwise, from what it was observed to do (:mod:`.observed`),
the seed's value kept beside it. Device-reported attributes override every prediction; a
combination neither lists is a LayoutError. Parameters and readings: docs/runtime/codec.md."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from math import lcm, prod

import numpy as np
from typing_extensions import TypedDict

from npu_hil.harness.codec.encodings import Encoding
from npu_hil.harness.codec.engine import BlockedLayout, Dim
from npu_hil.harness.codec.params import bounded_size, int_tuple, one_int, round_up, take_params
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.rockchip import observed
from npu_hil.targets.rockchip import tables as rockchip
from npu_hil.targets.rockchip.quant import RKNN_TYPES
from npu_hil.targets.rockchip.tables import WidthRule
from npu_hil.targets.unit import ROW_ALIGNMENTS

INPUT_LAYOUTS = ("NHWC", "NC1HWC2", "UNDEFINE")
OUTPUT_LAYOUTS = ("NCHW", "NHWC", "NC1HWC2", "UNDEFINE")
LAST_OPS = ("conv", "other", "conv_sigmoid")
"""What produced an output: a convolution (fused ones included), anything else, or a fused
Conv+Sigmoid (which pads float16 channels its own way: deviation ``conv-sigmoid-fp16``)."""
PARAMS = {
    ("input", "NHWC"): ("first_layer", "w_stride", "size_with_stride"),
    ("input", "NC1HWC2"): ("first_layer", "c2", "native_dims", "size_with_stride"),
    ("input", "UNDEFINE"): ("first_layer", "size_with_stride"),
    ("output", "NCHW"): ("size",),
    ("output", "NHWC"): ("last_op", "native_dims", "size"),
    ("output", "NC1HWC2"): ("last_op", "c2", "hw_align", "native_dims", "size"),
    ("output", "UNDEFINE"): ("last_axis_align", "size"),
}


class RknnLayoutParams(TypedDict, total=False):
    """The parameters of an RKNN layout (:data:`PARAMS` says which each layout takes), as the
    forensics and the simulator's faults give them."""

    first_layer: str
    w_stride: int
    size_with_stride: int
    c2: int
    native_dims: list[int]
    size: int
    last_op: str
    hw_align: int
    last_axis_align: int


class RknnPrediction(TypedDict, total=False):
    """A layout's ``attributes``: the ``rknn_tensor_attr`` fields it predicts, and the rows and
    rules behind them (what the attribute diff and ``npu-hil layout`` show)."""

    first_layer: str
    mean_scale_on: rockchip.Executor
    width_rule: WidthRule | None
    table_row: str
    precision: str
    last_op: str
    last_axis_align: int
    fmt: str
    dims: list[int]
    native_dims: list[int]
    c2: int
    hw_align: int
    w_stride: int
    predicted_w_stride: int
    width_align: int
    seed_width_align: int
    seed_channels: int
    size: int
    size_with_stride: int
    type: str
    n_elems: int


# A layout's params come from the caller or the device's report: take_params checks their names
# and each is checked (one_int, int_tuple) where it is read.


def build(
    target: str,
    name: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    role: str,
    params: Mapping[str, object],
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
    ask = _Ask(target, name, role, where, shape, dtype, params)
    return _input(ask) if role == "input" else _output(ask)


@dataclass(frozen=True)
class _Ask:
    """The layout asked for, as every builder below reads it."""

    target: str
    name: str
    role: str
    where: str
    shape: tuple[int, ...]
    dtype: np.dtype
    params: Mapping[str, object]

    @property
    def size_key(self) -> str:
        """The field holding the buffer length: ``size_with_stride`` (inputs) or ``size``."""
        return "size_with_stride" if self.role == "input" else "size"


def _input(ask: _Ask) -> BlockedLayout:
    target, shape, dtype, params = ask.target, ask.shape, ask.dtype, ask.params
    first_layer = str(params.get("first_layer", rockchip.default_first_layer(target)))
    row, row_note = input_row_for(target, first_layer, len(shape), dtype)
    table_row = (
        f"{row.platform} input row: first layer {row.first_layer}, rank "
        f"{'4' if row.rank4 else 'not 4'}, input {row.input_types_text()}{row_note}"
    )
    base: RknnPrediction = {
        "first_layer": first_layer,
        "mean_scale_on": row.mean_scale_on,
        "width_rule": row.width_rule,
        "table_row": table_row,
    }
    if ask.name == "UNDEFINE":
        multiple = observed.flat_input_align(target)  # 8 bytes or more on every platform
        size_source = (
            f"predicted: rounded up to {multiple} bytes (deviation flat-input-size: "
            f"{observed.deviation('flat-input-size').provenance(target)}; the seed: "
            "the tensor's own size)"
        )
        return _flat(ask, round_up(prod(shape) * dtype.itemsize, multiple), size_source, base)
    if ask.name == "NC1HWC2":
        c2, c2_source = _c2(ask)
        channels = (round_up(shape[1], c2), f"predicted: channels padded to C2 = {c2}")
        return _nc1hwc2(ask, c2, c2_source, channels, hw_align=1, base=base)
    n, c, h, w = shape
    seed_align = row.width_align(c)
    align, align_source = seed_align, table_row
    seen = observed.input_width_align(target, row.first_layer, c)
    if seen is not None:
        align = seen[0]
        align_source = (
            f"deviation {seen[1]}: {observed.observed_by(row.platform)}; the seed says "
            f"{seed_align} ({table_row})"
        )
    predicted = round_up(w, align)
    w_stride, source = predicted, f"predicted: width aligned to {align} ({align_source})"
    if "w_stride" in params:
        given = one_int(ask.where, "w_stride", params["w_stride"])
        w_stride, source = (given or w), "given (device-reported)"
        if w_stride < w:
            raise LayoutError(f"{ask.where}: w_stride {w_stride} is smaller than the width {w}")
    item = dtype.itemsize
    return _nhwc(
        ask,
        w_stride,
        c,
        {"w_stride": source},
        {
            **base,
            "fmt": "NHWC",
            "dims": [n, h, w, c],
            "w_stride": w_stride,
            "predicted_w_stride": predicted,
            "width_align": align,
            "seed_width_align": seed_align,
            "size": prod(shape) * item,
        },
    )


def input_row_for(
    target: str, first_layer: str, rank: int, dtype: np.dtype
) -> tuple[rockchip.InputRow, str]:
    """The input table's row, and a note where a deviation chose it (int8 on the uint8 row;
    a flat input where the seed lists rank 4 only): the simulated board's and preflight's."""
    input_type = rockchip.input_type_of(dtype.name)
    try:
        return rockchip.input_row(
            target, first_layer=first_layer, rank=rank, input_type=input_type
        ), ""
    except LayoutError:
        if rank != 4 and observed.deviation("non4d-inputs").applies_to(target):
            # A flat input: the rank-4 row's first layer and mean/scale stand for it.
            row, note = input_row_for(target, first_layer, 4, dtype)
            provenance = observed.deviation("non4d-inputs").provenance(target)
            return row, f"{note}; rank {rank} built flat (deviation non4d-inputs: {provenance})"
        if not (
            input_type == "int8" and observed.deviation("int8-default-input").applies_to(target)
        ):
            raise
    row = rockchip.input_row(target, first_layer=first_layer, rank=rank, input_type="uint8")
    note = (
        f"; int8 takes the uint8 row (deviation int8-default-input: "
        f"{observed.observed_by(row.platform)})"
    )
    return row, note


def _output(ask: _Ask) -> BlockedLayout:
    target, name, where, shape, params = ask.target, ask.name, ask.where, ask.shape, ask.params
    if len(shape) != 4:  # UNDEFINE: build() gives the others rank 4
        return _flat_output(ask)
    precision = rockchip.precision_of(ask.dtype.name)
    item = ask.dtype.itemsize
    try:
        row = rockchip.output_row(target, precision=precision, rank=len(shape), layout=name)
    except LayoutError:
        if name != "NCHW":
            raise
        # The normal API's output (rknn_outputs_get) is NCHW on every platform, also where the
        # zero-copy table lists no NCHW native output (RV1103/RV1106, RV1103B/RV1106B, RK2118):
        # every observed runtime reports it (OUTPUT_ATTR, fmt NCHW).
        base: RknnPrediction = {
            "precision": precision,
            "table_row": "the normal API's converted output",
        }
        return _flat(ask, prod(shape) * item, "the tensor's own size (normal API)", base)
    last_op = str(params.get("last_op", "conv"))
    if last_op not in LAST_OPS:
        raise LayoutError(f"{where}: last_op must be one of {', '.join(LAST_OPS)}, got {last_op!r}")
    multiple = row.channel_align(last_op != "other")
    table_row = (
        f"{row.platform} output row: {precision}, rank {'4' if row.rank4 else 'not 4'}, "
        f"{row.layouts_text()}, channels x{row.channel_align_conv} (conv) / "
        f"x{row.channel_align_other} (other), H*W x{row.hw_align}"
    )
    base = {"precision": precision, "last_op": last_op, "table_row": table_row}
    if name in ("UNDEFINE", "NCHW"):
        return _flat(ask, prod(shape) * item, "the tensor's own size", base)
    if name == "NC1HWC2":
        c2, c2_source = _c2(ask)
        hw_align = one_int(where, "hw_align", params.get("hw_align", row.hw_align))
        channels = _nc1hwc2_output_channels(target, shape[1], precision, last_op, multiple, c2)
        return _nc1hwc2(ask, c2, c2_source, channels, hw_align=hw_align, base=base)
    n, c, h, w = shape
    seed_multiple = multiple
    channel_source = f"predicted: padded to a multiple of {multiple} ({table_row})"
    if observed.deviation("nhwc-output-unpadded").applies_to(target):
        multiple = 1
        channel_source = (
            f"predicted: not padded (deviation nhwc-output-unpadded: "
            f"{observed.observed_by(row.platform)}; the seed says x{seed_multiple}, {table_row})"
        )
    padded_c = round_up(c, multiple)
    if "native_dims" in params:
        native = int_tuple(where, "native_dims", params["native_dims"], 4)
        if list(native[:3]) != [n, h, w] or native[3] < c:
            raise LayoutError(
                f"{where}: native_dims {list(native)} cannot hold NCHW {list(shape)} "
                f"(expected [N, H, W, C'] = [{n}, {h}, {w}, C' >= {c}])"
            )
        padded_c, channel_source = native[3], "given (device-reported native dims)"
    return _nhwc(
        ask,
        w,
        padded_c,
        {"channels": channel_source},
        {
            **base,
            "fmt": "NHWC",
            "dims": [n, h, w, padded_c],
            "seed_channels": round_up(c, seed_multiple),
        },
    )


def _nhwc(
    ask: _Ask,
    row_pixels: int,
    pixel_channels: int,
    provenance: dict[str, str],
    prediction: RknnPrediction,
) -> BlockedLayout:
    """NHWC of an NCHW tensor: each pixel holds ``pixel_channels`` slots (channels padded on
    outputs), each row ``row_pixels`` pixels (``w_stride`` on inputs)."""
    n, c, h, w = ask.shape
    item = ask.dtype.itemsize
    pixel = pixel_channels * item
    row = row_pixels * pixel
    dims = (
        Dim(0, n, h * row, 1, "n"),
        Dim(1, c, item, 1, "c"),
        Dim(2, h, row, 1, "h"),
        Dim(3, w, pixel, 1, "w"),
    )
    nbytes, provenance[ask.size_key] = _size(ask, n * h * row)
    return _layout(ask, dims, nbytes, provenance, prediction)


def _nc1hwc2(
    ask: _Ask,
    c2: int,
    c2_source: str,
    channels: tuple[int, str],
    *,
    hw_align: int,
    base: RknnPrediction,
) -> BlockedLayout:
    """NC1HWC2 as the vendor's conversion loops read it: element (n, c, h, w) at
    ``((n*C1 + c//C2) * plane + h*W + w) * C2 + c%C2``, where ``plane`` is dims[2]*dims[3] of the
    native dims padded to ``hw_align``. The runtime reports a plane whose H*W is not a multiple of
    4 flattened (``[N, C1, 1, ceil4(H*W), C2]``); the bytes are the same either way. ``channels``
    is the padded channel count (C1*C2) and where it comes from."""
    where, shape, item = ask.where, ask.shape, ask.dtype.itemsize
    n, c, h, w = shape
    if not 1 <= hw_align <= MAX_HW_ALIGN:
        raise LayoutError(f"{where}: hw_align must be 1 to {MAX_HW_ALIGN}, got {hw_align}")
    c1 = channels[0] // c2
    plane_h, plane_w = h, w
    if (
        ask.role == "output"
        and (h * w) % hw_align
        and observed.deviation("flattened-plane").applies_to(ask.target)
    ):
        plane_h, plane_w = 1, round_up(h * w, hw_align)
    provenance = {"c2": c2_source, "c1": channels[1]}
    if "native_dims" in ask.params:
        native = int_tuple(where, "native_dims", ask.params["native_dims"], 5)
        if native[0] != n or native[1] * native[4] < c or native[2] * native[3] < h * w:
            raise LayoutError(
                f"{where}: native_dims {list(native)} cannot hold NCHW {list(shape)} "
                "(expected [N, C1, H', W', C2] with C1*C2 >= C and H'*W' >= H*W)"
            )
        if min(native) < 1:
            raise LayoutError(f"{where}: native_dims {list(native)} must all be >= 1")
        _check_c2(where, "native_dims' C2", native[4])
        bounded_size(where, "native_dims", prod(native) * item, prod(shape) * item)
        _, c1, plane_h, plane_w, c2 = native
        provenance["c1"] = provenance["c2"] = "given (device-reported native dims)"
    plane = round_up(plane_h * plane_w, hw_align)
    dims = (
        Dim(0, n, c1 * plane * c2 * item, 1, "n"),
        Dim(1, c1, plane * c2 * item, c2, "c1"),
        Dim(1, c2, item, 1, "c2"),
        Dim(2, h, w * c2 * item, 1, "h"),
        Dim(3, w, c2 * item, 1, "w"),
    )
    native_dims = [n, c1, plane_h, plane_w, c2]
    nbytes, size_source = _size(ask, n * c1 * plane * c2 * item, f"native_dims {native_dims}")
    provenance[ask.size_key] = size_source
    provenance["hw_align"] = f"H*W plane padded to a multiple of {hw_align}"
    prediction: RknnPrediction = {
        **base,
        "fmt": "NC1HWC2",
        "native_dims": native_dims,
        "c2": c2,
        "hw_align": hw_align,
    }
    return _layout(ask, dims, nbytes, provenance, prediction)


def _nc1hwc2_output_channels(
    target: str, channels: int, precision: str, last_op: str, multiple: int, c2: int
) -> tuple[int, str]:
    """The padded channel count (C1*C2) of an NC1HWC2 output and where it comes from."""
    platform = rockchip.platform_of(target)
    seed = round_up(channels, lcm(multiple, c2))
    seed_text = f"the seed pads to a multiple of {lcm(multiple, c2)}"
    if last_op == "conv_sigmoid" and precision == "float16":
        fused = observed.conv_sigmoid_channels(target, channels)
        if fused is not None:
            return fused, (
                f"predicted: {fused} (deviation conv-sigmoid-fp16: "
                f"{observed.observed_by(platform)}; {seed_text}: {seed})"
            )
    if last_op != "other" and observed.deviation("conv-last-channels").applies_to(target):
        padded = round_up(channels, c2)
        return padded, (
            f"predicted: padded to C2 = {c2} (deviation conv-last-channels: "
            f"{observed.observed_by(platform)}; {seed_text}: {seed})"
        )
    return seed, f"predicted: channels padded to a multiple of {lcm(multiple, c2)}"


def _flat_output(ask: _Ask) -> BlockedLayout:
    """An output of rank 1 to 3, flat (UNDEFINE): what the compiler lays out (the zoo's compiled
    files), with the seed's row (or its absence) named beside it."""
    target, where, shape, dtype = ask.target, ask.where, ask.shape, ask.dtype
    platform = rockchip.platform_of(target)
    seed_rows = [r for r in rockchip.output_rows(target) if not r.rank4]
    if seed_rows:
        seed = f"{platform} output row: rank not 4, UNDEFINE, the tensor's own size"
    elif observed.deviation("non4d-outputs").applies_to(target):
        seed = (
            f"{platform} lists no output row of rank not 4; the compiler builds them "
            f"(deviation non4d-outputs: {observed.deviation('non4d-outputs').provenance(target)})"
        )
    else:
        raise LayoutError(f"{where}: {platform} lists no output of rank {len(shape)}")
    axis_align = one_int(where, "last_axis_align", ask.params.get("last_axis_align", 1))
    if axis_align < 1 or axis_align > 64:
        raise LayoutError(f"{where}: last_axis_align must be 1 to 64, got {axis_align}")
    padded = (*shape[:-1], round_up(shape[-1], axis_align)) if shape else shape
    multiple = observed.flat_output_align(target, dtype.name)
    default = round_up(prod(padded) * dtype.itemsize, multiple)
    source = (
        f"predicted: rounded up to {multiple} bytes (deviation flat-output-size: "
        f"{observed.deviation('flat-output-size').provenance(target)}; the seed: the tensor's "
        "own size)"
    )
    base: RknnPrediction = {"precision": dtype.name, "table_row": seed}
    if axis_align > 1:
        base["last_axis_align"] = axis_align
    return _flat(ask, default, source, base, padded)


def _flat(
    ask: _Ask,
    default_size: int,
    size_source: str,
    base: RknnPrediction,
    padded: tuple[int, ...] | None = None,
) -> BlockedLayout:
    """C order over ``padded`` (the shape with its last axis padded; default: unpadded)."""
    shape, item, key = ask.shape, ask.dtype.itemsize, ask.size_key
    room = padded or shape
    dims = tuple(Dim(a, d, item * prod(room[a + 1 :]), 1, f"d{a}") for a, d in enumerate(shape))
    nbytes, source = (
        _size(ask, default_size, where=f"{ask.target} {ask.name}")
        if key in ask.params
        else (default_size, size_source)
    )
    prediction: RknnPrediction = {**base, "fmt": ask.name, "dims": list(shape)}
    return _layout(ask, dims, nbytes, {key: source}, prediction)


def _c2(ask: _Ask) -> tuple[int, str]:
    where, target, dtype = ask.where, ask.target, ask.dtype
    if "c2" in ask.params:
        return _check_c2(where, "c2", one_int(where, "c2", ask.params["c2"])), "given"
    if dtype.name not in ("int8", "uint8", "float16"):
        raise LayoutError(
            f"{where}: the C2 block is known for 8-bit and float16 data only, got "
            f"{dtype.name}; give the device's c2 or native_dims"
        )
    precision = rockchip.precision_of(dtype.name)
    c2, source = rockchip.c2_default(target, precision)
    seen = observed.c2_observed(target, precision)
    if seen is not None:
        return seen[0], (
            f"predicted: deviation {seen[1]} ({observed.observed_by(rockchip.platform_of(target))}"
            f"); the seed's reading gives {c2} ({source})"
        )
    return c2, f"predicted: {source}"


MAX_HW_ALIGN = 4096
"""An H*W plane alignment beyond a page is no alignment a runtime uses (the tables say 1 to 4)."""
MAX_C2 = 64
"""The largest C2 block: the runtimes report 1 to 16 (tests/data/rknn/observed.json.gz), the
user guide names 4 to 16; a power of two up to 64 leaves room for a wider NPU."""


def _check_c2(where: str, key: str, c2: int) -> int:
    if c2 < 1 or c2 > MAX_C2 or c2 & (c2 - 1):
        raise LayoutError(
            f"{where}: {key} must be a power of two from 1 to {MAX_C2} (the C2 block), got {c2}"
        )
    return c2


def _size(
    ask: _Ask, default: int, reach: str = "the layout", *, where: str | None = None
) -> tuple[int, str]:
    """The buffer length under the role's field: the device's, checked to reach ``default``
    bytes, else ``default``."""
    key, where = ask.size_key, where or ask.where
    if key not in ask.params:
        return default, "predicted from the layout"
    size = one_int(where, key, ask.params[key])
    bounded_size(where, key, size, default)
    if size < default:
        raise LayoutError(
            f"{where}: {key} {size} is smaller than the {default} bytes {reach} reach"
        )
    return size, "given (device-reported)"


def _layout(
    ask: _Ask,
    dims: tuple[Dim, ...],
    nbytes: int,
    provenance: dict[str, str],
    attributes: RknnPrediction,
) -> BlockedLayout:
    # The runtime's n_elems counts the slots of its dims, padding included (observed on every
    # attribute set of tests/data/rknn/observed.json.gz).
    counted = attributes.get("native_dims", attributes.get("dims", ask.shape))
    return BlockedLayout(
        target=ask.target,
        name=ask.name,
        role=ask.role,
        shape=ask.shape,
        dtype=ask.dtype,
        dims=dims,
        nbytes=nbytes,
        encoding=Encoding("raw", ask.dtype),
        axis_names=("n", "c", "h", "w") if len(ask.shape) == 4 else (),
        params=dict(ask.params),
        provenance=provenance,
        # The buffer length under the role's field (after the others where not predicted yet).
        attributes={
            **attributes,
            ask.size_key: nbytes,
            "type": RKNN_TYPES[ask.dtype.name],
            "n_elems": prod(counted),
        },
    )


# ------------------------------------------- the parameters a device gets wrong
# What forensics tries to explain a buffer (npu_hil.harness.diff.forensics) and what the
# simulator's wrong-alignment fault lays out instead.

C2_BLOCKS = (4, 8, 16, 32)


def forensic_variants(
    name: str, role: str, shape: tuple[int, ...], dtype: np.dtype
) -> Iterator[tuple[RknnLayoutParams, str]]:
    if len(shape) != 4:
        return
    width = shape[3]
    if role == "input" and name == "NHWC":
        for align in ROW_ALIGNMENTS:
            yield {"w_stride": -(-width // align) * align}, f"width aligned to {align}"
        yield {"first_layer": "float16"}, ""
    if name in ("NHWC", "NC1HWC2") and role == "output":
        yield {"last_op": "other"}, ""
    if name == "NC1HWC2":
        for c2 in C2_BLOCKS:
            for last_op in ("conv", "other"):
                for hw_align in (1, 4):
                    params: RknnLayoutParams = {"c2": c2, "hw_align": hw_align}
                    if role == "output":
                        params["last_op"] = last_op
                    elif last_op == "other" or hw_align != 1:
                        continue
                    yield params, ""


def fault_variants(layout: BlockedLayout) -> Iterator[RknnLayoutParams]:
    attrs = layout.attributes
    if layout.name == "NHWC" and layout.role == "input":
        predicted = int(attrs["w_stride"])
        for align in (1, 4, 8, 16, 32):
            yield {"w_stride": round_up(layout.shape[3], align)}
        yield {"w_stride": predicted + int(attrs.get("width_align", 1))}
    elif layout.name == "NC1HWC2":
        c2 = int(attrs["c2"])
        for other in (c2 // 2, c2 * 2):
            if other >= 1:
                yield {"c2": other}
        if layout.role == "output":
            yield {"hw_align": 8 if int(attrs["hw_align"]) != 8 else 1}
    elif layout.name == "NHWC":
        yield {"last_op": "other" if layout.params.get("last_op", "conv") == "conv" else "conv"}
