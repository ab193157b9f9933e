"""Kneron KL730: the 16 NPU data layouts of seeds/000 as data, and the ``stride_npu`` the runtime
reports for each, read the way Kneron's host library reads it (rules 1-5 with their vendor sources
and the facts beyond the seed: docs/runtime/codec.md, "How Kneron reads the KL730 stride_npu")."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
from typing_extensions import TypedDict

from npu_hil.harness.codec.encodings import Encoding
from npu_hil.harness.codec.engine import BlockedLayout, Dim, span
from npu_hil.harness.codec.params import int_tuple, one_int, round_up, take_params
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.tables import text_table
from npu_hil.targets.unit import ROW_ALIGNMENTS

TARGETS = ("kl730",)
ENTRY_BYTES = 16
AXIS_NAMES = ("n", "c", "h", "w")


@dataclass(frozen=True)
class Kl730Format:
    """One row of the seed's format list.

    ``pixel``: the channels of a pixel sit together in an entry (4W4C8B, HW4C8B, 1W16C8B ...);
    otherwise every channel is its own plane. ``entry_cols``: the row is padded to this many
    columns (1: no row padding). ``group``: channel group size of a pixel format, ``inner``: the
    groups of a pixel are adjacent (``*_CH_COMPACT``); ``outer``: Kneron's outer channel group
    mode (``stride_npu`` describes one group, the groups lie outside the batch).
    ``max_channels``: the most channels Kneron's reading can address (no group term).
    """

    name: str
    bits: int
    pixel: bool
    entry_cols: int
    group: int = 1
    inner: bool = False
    outer: bool = False
    max_channels: int | None = None
    hl: bool = False
    big_endian: bool = False
    input_only: bool = False
    channels: tuple[int, ...] = ()
    stored_channels: int | None = None
    quirk_15bit: bool = False

    @property
    def dtype(self) -> np.dtype:
        """The signed type the NPU's values are stored in."""
        return np.dtype("int16" if self.bits == 16 else "int8")


FORMATS: dict[str, Kl730Format] = {
    f.name: f
    for f in (
        Kl730Format("4W4C8B", 8, True, 4, group=4, max_channels=4, input_only=True),
        Kl730Format("1W16C8B_CH_COMPACT", 8, True, 1, group=16, inner=True),
        Kl730Format("16W1C8B", 8, False, 16),
        Kl730Format("1W16C8B", 8, True, 1, group=16, outer=True),
        Kl730Format("RAW_8B", 8, False, 1),
        Kl730Format("HW4C8B_KEEP_A", 8, True, 1, group=4, input_only=True, channels=(4,)),
        Kl730Format(
            "HW4C8B_DROP_A",
            8,
            True,
            1,
            group=4,
            input_only=True,
            channels=(3, 4),
            stored_channels=3,
        ),
        Kl730Format("HW1C8B", 8, False, 1, input_only=True),
        Kl730Format("8W1C16B", 16, False, 8, quirk_15bit=True),
        Kl730Format("4W4C8BHL", 16, True, 4, group=4, max_channels=4, hl=True, quirk_15bit=True),
        Kl730Format("1W16C8BHL", 16, True, 1, group=16, outer=True, hl=True, quirk_15bit=True),
        Kl730Format("16W1C8BHL", 16, False, 16, hl=True, quirk_15bit=True),
        Kl730Format(
            "1W16C8BHL_CH_COMPACT", 16, True, 1, group=16, inner=True, hl=True, quirk_15bit=True
        ),
        Kl730Format("RAW_16B", 16, False, 1, quirk_15bit=True),
        Kl730Format("HW1C16B_LE", 16, False, 1, input_only=True),
        Kl730Format("HW1C16B_BE", 16, False, 1, big_endian=True, input_only=True),
    )
}
SUMMARIES = {
    "4W4C8B": "4 columns x 4 channels an entry; C=3 leaves channel 3 zero",
    "1W16C8B_CH_COMPACT": "1 column x 16 channels an entry, groups of a pixel adjacent",
    "16W1C8B": "16 columns of one channel an entry",
    "1W16C8B": "1 column x 16 channels an entry, group-major",
    "RAW_8B": "16 consecutive values, flat NCHW",
    "HW4C8B_KEEP_A": "4 pixels x RGBA an entry, no column alignment",
    "HW4C8B_DROP_A": "4 pixels x RGB + a zero byte an entry",
    "HW1C8B": "16 pixels of one channel an entry, no column alignment",
    "8W1C16B": "8 columns of one channel an entry, 16-bit lanes",
    "4W4C8BHL": "L entry then H entry of 4 columns x 4 channels",
    "1W16C8BHL": "L then H entry of 1 column x 16 channels, group-major",
    "16W1C8BHL": "L then H entry of 16 columns of one channel",
    "1W16C8BHL_CH_COMPACT": "L then H entry of 1 column x 16 channels, groups adjacent",
    "RAW_16B": "8 consecutive values, flat NCHW",
    "HW1C16B_LE": "8 pixels an entry, little-endian, no column alignment",
    "HW1C16B_BE": "8 pixels an entry, big-endian, no column alignment",
}
"""What ``npu-hil targets show kl730`` says of each format."""

PARAMS = ("stride_npu", "value_bits")


class Kl730LayoutParams(TypedDict, total=False):
    """The parameters of a KL730 layout, as the forensics and the simulator's faults give them."""

    stride_npu: list[int]
    value_bits: int


DTYPES = {8: ("int8", "uint8"), 16: ("int16", "uint16")}


def canonical_shape(shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(N, C, H, W) and the axes added to reach it: rank 1 is (C), 2 is (N, C), 3 is (N, C, W)."""
    inserted = {1: (0, 2, 3), 2: (2, 3), 3: (2,), 4: ()}.get(len(shape))
    if inserted is None:
        raise LayoutError(
            f"kl730: expected a tensor of rank 1 to 4 (N, C, H, W), got shape {shape}"
        )
    values = iter(shape)
    return tuple(1 if a in inserted else next(values) for a in range(4)), inserted


def predict_stride_npu(fmt: Kl730Format, shape4: tuple[int, ...]) -> tuple[int, int, int, int]:
    """The per-axis strides (N, C, H, W) Kneron's library reads the codec's bytes with, in the
    runtime's units. Outer-group formats describe one group of ``group`` channels (the docs'
    rule 2): the group stride is not a stride of any axis."""
    _, c, h, w = shape4
    row = round_up(w, fmt.entry_cols)
    if not fmt.pixel:
        return (c * h * row, h * row, row, 1)
    per_pixel = fmt.group if fmt.outer else round_up(c, fmt.group)
    return (h * row * per_pixel, 1, row * per_pixel, per_pixel)


def group_stride(
    fmt: Kl730Format, shape4: tuple[int, ...], stride_npu: tuple[int, ...], axes: tuple[int, ...]
) -> int:
    """Kneron's channel group stride ``G`` of an outer-group format: the largest
    ``stride_npu[a] * shape[a]`` over the axes ``axes`` the device reports whose stride is not 1
    (the batch included). Refuses strides Kneron's rule cannot read: the channel stride must be
    the one stride of 1 (the rule finds the channel axis by it), and some other axis must give
    ``G``."""
    where = f"kl730 {fmt.name}"
    c = shape4[1]
    reported = ", ".join(f"{AXIS_NAMES[a]}={stride_npu[a]}" for a in axes)
    if stride_npu[1] != 1:
        raise LayoutError(
            f"{where}: C = {c} needs a channel stride of 1 (Kneron's rule finds the channel axis "
            f"by it and adds the group term there), got stride_npu {reported}"
        )
    ones = [AXIS_NAMES[a] for a in axes if a != 1 and stride_npu[a] == 1]
    if ones:
        raise LayoutError(
            f"{where}: C = {c}: axis {', '.join(ones)} also has stride 1, so Kneron's rule would "
            f"take it for the channel axis (stride_npu {reported})"
        )
    spans = [stride_npu[a] * shape4[a] for a in axes if a != 1]
    if not spans:
        raise LayoutError(
            f"{where}: C = {c} > {fmt.group} needs an axis besides the channel for Kneron's "
            f"channel group stride; shape {tuple(shape4[a] for a in axes)} has none"
        )
    return max(spans)


def dims_from_strides(
    fmt: Kl730Format, shape4: tuple[int, ...], stride_npu: tuple[int, ...], axes: tuple[int, ...]
) -> list[Dim]:
    """The engine's dims for ``stride_npu`` (N, C, H, W) in the runtime's units, placing each
    element where Kneron's reading puts it; ``axes`` are the axes the tensor has (the others are
    size 1 and Kneron never sees them)."""
    n, c, h, w = shape4
    sn, sc, sh, sw = stride_npu
    unit = 2 if fmt.bits == 16 and not fmt.hl else 1
    padded_c = round_up(c, fmt.group)
    dims: list[Dim] = [Dim(0, n, sn * unit, 1, "n")]
    if fmt.outer and padded_c > fmt.group:
        # Channel c lands at (c & 15) * 1 + (c >> 4) * G: a group dim outside every other one.
        g = group_stride(fmt, shape4, stride_npu, axes)
        dims += [
            Dim(1, padded_c // fmt.group, g, fmt.group, "group"),
            Dim(1, fmt.group, sc, 1, "c"),
        ]
    else:
        dims.append(Dim(1, padded_c, sc * unit, 1, "c"))
    dims += [Dim(2, h, sh * unit, 1, "h"), Dim(3, w, sw * unit, 1, "w")]
    return _split_hl_entries(dims) if fmt.hl else dims


def _split_hl_entries(dims: list[Dim]) -> list[Dim]:
    """HL formats: every 16-byte entry of the 8-bit-equivalent layout becomes an L entry followed
    by an H entry, so offsets that cross an entry double: offset' = (o // 16) * 32 + o % 16."""
    out = []
    for dim in dims:
        if dim.stride % ENTRY_BYTES == 0 or dim.size == 1:
            out.append(Dim(dim.axis, dim.size, dim.stride * 2, dim.block, dim.name))
            continue
        per_entry = ENTRY_BYTES // dim.stride
        if ENTRY_BYTES % dim.stride or dim.block != 1:
            raise LayoutError(
                f"kl730 HL: stride {dim.stride} of axis {dim.name} does not divide a 16-byte entry"
            )
        if dim.size <= per_entry:
            out.append(dim)
            continue
        out += [
            Dim(
                dim.axis, -(-dim.size // per_entry), 2 * ENTRY_BYTES, per_entry, dim.name + "_entry"
            ),
            Dim(dim.axis, per_entry, dim.stride, 1, dim.name),
        ]
    return out


def build(
    target: str,
    name: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    role: str,
    params: Mapping[str, object],
) -> BlockedLayout:
    fmt = FORMATS[name]
    where = f"kl730 {name}"
    take_params(where, params, PARAMS)
    if role == "output" and fmt.input_only:
        outputs = ", ".join(f.name for f in FORMATS.values() if not f.input_only)
        raise LayoutError(
            f"{where} is an input-only format (seeds/000 lists it only under Input Data Layout); "
            f"output formats are: {outputs}"
        )
    if dtype.name not in DTYPES[fmt.bits]:
        raise LayoutError(
            f"{where} holds {fmt.bits}-bit data: expected dtype {' or '.join(DTYPES[fmt.bits])}, "
            f"got {dtype.name}"
        )
    shape4, inserted = canonical_shape(shape)
    if fmt.channels and shape4[1] not in fmt.channels:
        raise LayoutError(
            f"{where} needs C in {fmt.channels} channels, got C = {shape4[1]} (shape {shape})"
        )
    if fmt.max_channels is not None and shape4[1] > fmt.max_channels:
        raise LayoutError(
            f"{where} holds at most {fmt.max_channels} channels, got C = {shape4[1]} (shape "
            f"{shape}): Kneron reads this format as sum(index * stride_npu) with no channel "
            f"group term, so channel {fmt.max_channels} would alias pixel 1 channel 0; use "
            "1W16C8B (or 1W16C8BHL) for more channels"
        )
    value_bits = one_int(
        where, "value_bits", params.get("value_bits", 15 if fmt.quirk_15bit else 16)
    )
    encoding = _encoding(fmt, dtype, value_bits, where)

    provenance = {}
    predicted = predict_stride_npu(fmt, shape4)
    if "stride_npu" in params:
        given = int_tuple(where, "stride_npu", params["stride_npu"], len(shape))
        values = iter(given)
        # Axes the tensor does not have are size 1: their stride moves nothing; they keep the
        # predicted one, and Kneron's group stride is taken over the reported axes only.
        strides = tuple(predicted[a] if a in inserted else next(values) for a in range(4))
        provenance["stride_npu"] = "given (device-reported)"
    else:
        strides = predicted
        rows = f"rows padded to {fmt.entry_cols} columns" if fmt.entry_cols > 1 else "rows unpadded"
        groups = (
            f"channels in groups of {fmt.group} ({_group_mode(fmt)})"
            if fmt.pixel
            else "one plane per channel"
        )
        provenance["stride_npu"] = f"predicted: {rows}, {groups} (seeds/000 {name})"
    axes = tuple(a for a in range(4) if a not in inserted)
    dims = dims_from_strides(fmt, shape4, strides, axes)
    stored = list(shape4)
    if fmt.stored_channels is not None:
        stored[1] = min(stored[1], fmt.stored_channels)
    part_stride = ENTRY_BYTES if fmt.hl else 1
    return BlockedLayout(
        target=target,
        name=name,
        role=role,
        shape=shape,
        dtype=dtype,
        dims=tuple(dims),
        nbytes=round_up(span(dims, encoding.nparts, part_stride), ENTRY_BYTES),
        encoding=encoding,
        part_stride=part_stride,
        canonical_shape=shape4,
        stored=tuple(stored),
        axis_names=tuple(AXIS_NAMES[a] for a in range(4) if a not in inserted),
        inserted_axes=inserted,
        entry_bytes=ENTRY_BYTES,
        params=dict(params),
        provenance=provenance,
        attributes={
            "data_layout": name,
            "stride_npu": [s for a, s in enumerate(strides) if a not in inserted],
            "predicted_stride_npu": [s for a, s in enumerate(predicted) if a not in inserted],
            "value_bits": value_bits,
        },
    )


def _group_mode(fmt: Kl730Format) -> str:
    if fmt.inner:
        return "inner mode"
    if fmt.outer:
        return "outer mode: stride_npu of one group, groups outside the batch"
    return f"at most {fmt.max_channels or fmt.group} channels"


def _encoding(fmt: Kl730Format, dtype: np.dtype, value_bits: int, where: str) -> Encoding:
    if fmt.bits == 8:
        if value_bits not in (8, 16):  # 16: the default, which an 8-bit format ignores
            raise LayoutError(f"{where}: an 8-bit format holds 8 value bits, got {value_bits}")
        return Encoding("raw", dtype)
    if value_bits not in (15, 16):
        raise LayoutError(f"{where}: value_bits must be 15 or 16, got {value_bits}")
    if fmt.big_endian:
        if value_bits == 15:
            raise LayoutError(f"{where}: the 15-bit reading applies only to little-endian formats")
        return Encoding("raw_be", dtype)
    if value_bits == 16:
        return Encoding("raw", dtype)
    return Encoding("kl15_hl" if fmt.hl else "kl15", dtype)


def tables_text(target: str = "kl730") -> str:
    """The seed's format list with what the codec derives from each row."""
    header = ("format", "bits", "roles", "row pad (cols)", "channel groups", "bytes", "summary")
    rows = [
        (
            f.name,
            str(f.bits),
            "input" if f.input_only else "input, output",
            str(f.entry_cols) if f.entry_cols > 1 else "none",
            f"{f.group} ({_group_mode(f)})" if f.pixel else "planes",
            ("HL planes" if f.hl else "big-endian" if f.big_endian else "little-endian")
            if f.bits == 16
            else "-",
            SUMMARIES[f.name],
        )
        for f in FORMATS.values()
    ]
    lines = [f"{target}: Kneron KL730 NPU data layouts (seeds/000), 16-byte entries", ""]
    lines += text_table(header, rows, rule=False)
    lines += [
        "",
        "16-bit data keeps 15 significant bits on the device (value_bits=15, the default for the "
        "formats the runtime reads that way); buffers are whole 16-byte entries.",
    ]
    return "\n".join(lines)


# ------------------------------------------- the parameters a device gets wrong
# What forensics tries to explain a buffer (npu_hil.harness.diff.forensics) and what the
# simulator's wrong-alignment fault lays out instead.


def forensic_variants(
    name: str, role: str, shape: tuple[int, ...], dtype: np.dtype
) -> Iterator[tuple[Kl730LayoutParams, str]]:
    fmt = FORMATS[name]
    if fmt.bits == 16:
        yield {"value_bits": 16 if fmt.quirk_15bit else 15}, ""
    try:
        shape4, inserted = canonical_shape(shape)
    except LayoutError:
        return
    for cols in ROW_ALIGNMENTS:
        if cols == fmt.entry_cols:
            continue
        strides = predict_stride_npu(dataclasses.replace(fmt, entry_cols=cols), shape4)
        given = [s for a, s in enumerate(strides) if a not in inserted]
        yield {"stride_npu": given}, f"rows padded to {cols} columns"


def fault_variants(layout: BlockedLayout) -> Iterator[Kl730LayoutParams]:
    fmt = FORMATS[layout.name]
    shape4, inserted = canonical_shape(layout.shape)
    for cols in (4, 8, 16, 32, 64, shape4[3] + 1):
        if cols == fmt.entry_cols:
            continue
        strides = predict_stride_npu(dataclasses.replace(fmt, entry_cols=cols), shape4)
        yield {"stride_npu": [s for a, s in enumerate(strides) if a not in inserted]}
