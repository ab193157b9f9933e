"""KL730 packing against the byte diagrams of seeds/000, entry by entry.

``golden/kl730_seed_entries.json`` is the seed's diagrams as data (made by
``golden/extract_kl730_seed.py``; the last test re-extracts it when ``../shared`` is there). For
every format and section the diagram is drawn in, a tensor is packed and each drawn byte checked
against what its cell names:

- ``PnCHmGo`` is channel ``16*o + m`` (``m`` without ``G``) of pixel ``n``; pixels are numbered
  along row 0, column first. ``RAW_8B`` numbers pixels per channel, ``RAW_16B`` across the whole
  flat NCHW tensor (spec: "P8..P15 are channel 1 when H*W = 8").
- ``L``/``H``: the low/high byte. In the HL formats that is the runtime's 15-bit encoding
  (spec note 3: ``lo = (v >> 1) & 0x7F``, ``hi = (v >> 8) & 0xFF``); in ``HW1C16B_LE``/``_BE``
  the plain bytes of the value.
- A 16-bit lane (``[15:0]`` ...) holds the value little-endian, bit 0 cleared.
- ``0`` is a zero byte, and so is a cell naming a channel the tensor does not have.

``locate`` must name the same element, byte part and bit range for every drawn byte.
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import KL730_8BIT, KL730_FORMATS, KL730_INPUT_ONLY

from npu_hil.harness.codec import BlockedLayout, get_layout
from npu_hil.harness.codec.reported import layout_from_report
from npu_hil.harness.errors import LayoutError

GOLDEN_DIR = Path(__file__).parent / "golden"
FIXTURE = GOLDEN_DIR / "kl730_seed_entries.json"
SEED = Path(__file__).resolve().parents[3] / "shared" / "seeds" / "000_c8f60e1c54f092ef.txt"

DIAGRAMS: dict[str, dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))

CELL = re.compile(r"^P(?P<pixel>\d+)CH(?P<channel>\d+)(?:G(?P<group>\d+))?(?P<part>[LH])?$")
LANE = re.compile(r"^\[(?P<hi>\d+):(?P<lo>\d+)\]$")
FILLER_8 = 0xEE
FILLER_16 = 0xF0F0  # bit 0 clear; its bytes and 15-bit L byte differ from every named value


@dataclass(frozen=True)
class Cell:
    """One drawn cell: the element it names (None for ``0``) and the byte part it holds."""

    index: tuple[int, int, int, int] | None
    part: str | None


def shape_for(name: str, channels: int | None = None) -> tuple[int, int, int, int]:
    """A shape the diagram applies to: the seed's example for RAW formats, else two rows of 64
    columns (no row padding reached) with 32 channels where groups G0 and G1 are drawn.

    Outer (group-major) mode draws group 1 right after the last pixel of group 0, which holds
    only when those are all the pixels there are: one row of as many columns as it draws."""
    info = DIAGRAMS[name]
    if info["example_shape"]:
        b, c, h, w = info["example_shape"]
        return (b, c, h, w)
    cells = [m for row in info["entries"] for t in row if (m := CELL.match(t))]
    if channels is None:
        if any(m["group"] for m in cells):
            channels = 32
        elif any(int(m["channel"]) > 0 for m in cells):
            channels = 4
        else:
            channels = 1
    order = [(int(m["group"]), int(m["pixel"])) for m in cells if m["group"] is not None]
    if order and order == sorted(order):  # group-major
        return (1, channels, 1, len({pixel for _, pixel in order}))
    return (1, channels, 2, 64)


def parse_cell(name: str, token: str, shape: tuple[int, int, int, int]) -> Cell:
    if token == "0":
        return Cell(None, None)
    match = CELL.match(token)
    assert match, f"{name}: unreadable cell {token!r}"
    pixel, channel = int(match["pixel"]), int(match["channel"])
    if match["group"] is not None:
        channel += 16 * int(match["group"])
    _, c, _, w = shape
    if name == "RAW_16B":
        flat = np.unravel_index(pixel, shape)
        index = tuple(int(i) for i in flat)
        assert index[1] == channel, f"{token}: flat pixel {pixel} is not in channel {channel}"
    elif name == "RAW_8B":
        index = (0, channel, *divmod(pixel, w))
    else:
        assert pixel < w, f"{name}: cell {token} is beyond row 0 of {shape}"
        index = (0, channel, 0, pixel)
    if channel >= c:
        return Cell(None, None)  # a channel the tensor does not have: a zero byte
    n_, c_, h_, w_ = index
    return Cell((n_, c_, h_, w_), match["part"])


def is_hl(name: str) -> bool:
    return "8BHL" in name


def named_values(
    name: str, shape: tuple[int, int, int, int], bits: int
) -> tuple[np.ndarray, dict[tuple[int, ...], int]]:
    """A tensor whose elements named in the diagram hold distinct values (16-bit: bit 0 clear,
    both bytes and the 15-bit L byte distinct), every other element a filler value."""
    info = DIAGRAMS[name]
    unsigned = np.uint8 if bits == 8 else np.uint16
    x = np.full(shape, FILLER_8 if bits == 8 else FILLER_16, dtype=unsigned)
    values: dict[tuple[int, ...], int] = {}
    for row in info["entries"]:
        for token in row:
            cell = parse_cell(name, token, shape)
            if cell.index is None or cell.index in values:
                continue
            k = len(values) + 1
            assert k < 0x70, "too many named elements for distinct values"
            values[cell.index] = k if bits == 8 else (k << 8) | (k << 1)
            x[cell.index] = values[cell.index]
    return x, values


def expected_byte(name: str, value: int, part: str | None, lane_byte: int, lane_bytes: int) -> int:
    if lane_bytes == 2:  # a 16-bit lane: the value little-endian, bit 0 cleared
        return ((value & 0xFFFE) >> (8 * lane_byte)) & 0xFF
    if part is None:
        return value
    if is_hl(name):
        return (value >> 1) & 0x7F if part == "L" else (value >> 8) & 0xFF
    return value & 0xFF if part == "L" else value >> 8


CASES = [
    (name, section, channels)
    for name, info in DIAGRAMS.items()
    for section in info["sections"]
    for channels in ((None, 3) if name in ("4W4C8B", "HW4C8B_DROP_A") else (None,))
]


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
@pytest.mark.parametrize(("name", "section", "channels"), CASES)
def test_pack_matches_seed_diagram(
    name: str, section: str, channels: int | None, signed: bool
) -> None:
    info = DIAGRAMS[name]
    bits = 8 if name in KL730_8BIT else 16
    shape = shape_for(name, channels)
    dtype = np.dtype(f"{'i' if signed else 'u'}{bits // 8}")
    layout = get_layout("kl730", name, shape, dtype, role=section)
    x, values = named_values(name, shape, bits)
    buf = layout.pack(x.view(dtype))
    lanes = [LANE.match(lane) for lane in info["lanes"]]
    assert all(lanes)
    for entry, row in enumerate(info["entries"]):
        for token, lane in zip(row, lanes, strict=True):
            assert lane is not None
            lo, hi = int(lane["lo"]), int(lane["hi"])
            lane_bytes = (hi - lo + 1) // 8
            cell = parse_cell(name, token, shape)
            for k in range(lane_bytes):
                byte = lo // 8 + k
                offset = entry * 16 + byte
                where = f"{name} ({section}) {shape}: entry #{entry} {token} byte {byte}"
                _check_byte(
                    layout, buf, offset, byte, entry, cell, values, name, k, lane_bytes, where
                )


def _check_byte(
    layout: BlockedLayout,
    buf: np.ndarray,
    offset: int,
    byte: int,
    entry: int,
    cell: Cell,
    values: dict[tuple[int, ...], int],
    name: str,
    lane_byte: int,
    lane_bytes: int,
    where: str,
) -> None:
    __tracebackhide__ = True
    loc = layout.locate(offset)
    assert loc.entry == entry, where
    assert loc.bits == f"[{8 * byte + 7}:{8 * byte}]", where
    if cell.index is None:
        assert buf[offset] == 0, f"{where}: expected a zero byte, got {buf[offset]:#04x}"
        assert loc.padding and loc.index is None, f"{where}: locate says {loc}"
        return
    part = cell.part
    if lane_bytes == 2:
        part = "L" if lane_byte == 0 else "H"
    want = expected_byte(name, values[cell.index], cell.part, lane_byte, lane_bytes)
    assert buf[offset] == want, f"{where}: expected {want:#04x}, got {buf[offset]:#04x}"
    assert not loc.padding, f"{where}: locate says padding"
    assert loc.index == cell.index, f"{where}: locate says {loc.index}"
    assert loc.part == part, f"{where}: locate says part {loc.part}"


def test_fixture_lists_every_format_in_the_seed_sections() -> None:
    assert list(DIAGRAMS) == list(KL730_FORMATS)
    for name, info in DIAGRAMS.items():
        want = ["input"] if name in KL730_INPUT_ONLY else ["input", "output"]
        assert info["sections"] == want, name
        assert len(info["entries"]) >= 3
        lanes = 8 if name in ("8W1C16B", "RAW_16B") else 16
        assert len(info["lanes"]) == lanes, name


def test_raw_examples_are_the_seed_shapes() -> None:
    assert DIAGRAMS["RAW_8B"]["example_shape"] == [1, 3, 4, 4]
    assert DIAGRAMS["RAW_16B"]["example_shape"] == [1, 3, 2, 4]


def _extractor() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "extract_kl730_seed", GOLDEN_DIR / "extract_kl730_seed.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not SEED.is_file(), reason=f"seed text not found at {SEED}")
def test_fixture_matches_a_fresh_extraction_of_the_seed() -> None:
    extractor = _extractor()
    fresh = extractor.extract(SEED.read_text(encoding="utf-8"))
    assert fresh == DIAGRAMS
    assert json.loads(extractor.render(fresh)) == DIAGRAMS


# ------------------------------------------------------------ the spec's placement, any shape
# The diagrams fix the first entries; spec/kl730-layouts.md fixes the rest: "W" formats pad a row
# to the entry's columns (16 for 16W1C8B/16W1C8BHL, 8 for 8W1C16B, 4 for 4W4C8B/4W4C8BHL), HW*
# and RAW_* do not pad; channels pad to the group (16, or 4); outer mode (1W16C8B, 1W16C8BHL)
# stores all rows of group 0, then group 1..., the groups outside the batch (Kneron's reading of
# stride_npu, docs/runtime/codec.md); 4W4C8B* hold at most 4 channels; inner mode
# (*_CH_COMPACT) the groups of a pixel one after another; HL formats turn each 16-byte entry of the
# 8-bit layout into an L entry followed by an H entry. Below, that text as a formula, for 4-D
# tensors.

ROW_COLUMNS = {"16W1C8B": 16, "16W1C8BHL": 16, "8W1C16B": 8, "4W4C8B": 4, "4W4C8BHL": 4}
PIXEL_GROUP = {
    "4W4C8B": 4,
    "4W4C8BHL": 4,
    "HW4C8B_KEEP_A": 4,
    "HW4C8B_DROP_A": 4,
    "1W16C8B": 16,
    "1W16C8BHL": 16,
    "1W16C8B_CH_COMPACT": 16,
    "1W16C8BHL_CH_COMPACT": 16,
}
INNER = {"1W16C8B_CH_COMPACT", "1W16C8BHL_CH_COMPACT"}


def spec_offsets(name: str, shape: tuple[int, int, int, int]) -> np.ndarray:
    """Byte offset of every (n, c, h, w, slot) per the spec's text (slot 0 = the byte at the
    element's address: the L byte, or H for HW1C16B_BE)."""
    n, c, h, w = np.indices(shape, sparse=True)
    batch, channels, rows, cols = shape
    row = -(-cols // ROW_COLUMNS.get(name, 1)) * ROW_COLUMNS.get(name, 1)
    group = PIXEL_GROUP.get(name)
    if group is None:  # one plane per channel
        element = ((n * channels + c) * rows + h) * row + w
    else:
        padded = -(-channels // group) * group
        if name in INNER or padded == group:
            element = ((n * rows + h) * row + w) * padded + c
        else:
            plane = rows * row * group  # one group of one batch item
            element = (c // group) * batch * plane + n * plane + (h * row + w) * group
            element = element + c % group
    element = np.broadcast_to(element, shape)
    if name in KL730_8BIT:
        return element[..., None]
    if "8BHL" in name:  # the 8-bit layout, each entry split into an L entry then an H entry
        low = (element // 16) * 32 + element % 16
        return np.stack([low, low + 16], axis=-1)
    return np.stack([2 * element, 2 * element + 1], axis=-1)  # 16-bit lanes, in place


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(KL730_FORMATS),
    n=st.integers(1, 2),
    c=st.integers(1, 40),
    h=st.integers(1, 5),
    w=st.integers(1, 37),
    role=st.sampled_from(("input", "output")),
)
def test_placement_follows_the_spec_for_any_shape(
    name: str, n: int, c: int, h: int, w: int, role: str
) -> None:
    if name in ("HW4C8B_KEEP_A", "HW4C8B_DROP_A"):
        c = 4 if name == "HW4C8B_KEEP_A" or c % 2 else 3
    if name in ("4W4C8B", "4W4C8BHL"):
        c = 1 + (c - 1) % 4
    if name in KL730_INPUT_ONLY:
        role = "input"
    shape = (n, c, h, w)
    bits = 8 if name in KL730_8BIT else 16
    layout = get_layout("kl730", name, shape, f"uint{bits}", role=role)
    want = spec_offsets(name, shape)
    got = np.zeros_like(want)
    for index in np.ndindex(*shape):
        for slot in range(want.shape[-1]):
            got[(*index, slot)] = layout.offset_of(index, slot)
    if name == "HW4C8B_DROP_A":
        want, got = want[:, :3], got[:, :3]  # channel 3 is not stored
    bad = np.argwhere(got != want)
    assert bad.size == 0, (
        f"{name} {shape}: x{tuple(bad[0][:4])} slot {bad[0][4]} at {got[tuple(bad[0])]}, "
        f"spec says {want[tuple(bad[0])]}"
    )
    extent = int(want.max()) + 1
    assert layout.nbytes == -(-extent // 16) * 16, "whole 16-byte entries, the last one padded"
    x = np.arange(int(np.prod(shape)), dtype=f"uint{bits}").reshape(shape)
    if bits == 16:
        x = (x * 2) & 0xFFFE  # bit 0 clear: what the 15-bit formats keep
    buf = layout.pack(x.astype(f"uint{bits}"))
    if bits == 8:
        stored = want[:, :3] if name == "HW4C8B_DROP_A" else want
        values = x[:, :3] if name == "HW4C8B_DROP_A" else x
        assert np.array_equal(buf[stored[..., 0]], values)


# ------------------------------------------------- Kneron's own reading of stride_npu, any shape
# Restated from Kneron's conversion note for the KL730 and PLUS's conversion code (the sources
# are named in docs/runtime/codec.md), in this test's own words:
#   offset = sum(index[a] * stride_npu[a])                             every format, in its units;
#   1W16C8B, 1W16C8BHL: + (c >> 4) * (G - 16), c the axis of stride 1,
#                        G = max(stride_npu[a] * shape[a]) over the axes whose stride is not 1;
#   HL formats: the L byte at (offset // 16) * 32 + offset % 16, the H byte 16 after it,
#               value = int16(((L & 0x7F) | (H << 7)) << 1);
#   8W1C16B, RAW_16B: offset counts 16-bit words, value = int16(word & 0xFFFE).

OUTER_GROUP = ("1W16C8B", "1W16C8BHL")
HL_FORMATS = ("4W4C8BHL", "1W16C8BHL", "16W1C8BHL", "1W16C8BHL_CH_COMPACT")
WORD_FORMATS = ("8W1C16B", "RAW_16B", "HW1C16B_LE", "HW1C16B_BE")


def kneron_offsets(name: str, shape: tuple[int, ...], stride_npu: list[int]) -> np.ndarray:
    """(k, 2) byte offsets of every element (row-major order of ``shape``) as Kneron's library
    reads them from ``stride_npu``: column 0 the byte at the element's address (the L byte; the
    low byte of a 16-bit word, the high byte for big-endian HW1C16B_BE), column 1 the other one
    (unused for 8-bit formats)."""
    index = np.indices(shape).reshape(len(shape), -1).T.astype(np.int64)
    stride = np.asarray(stride_npu, dtype=np.int64)
    offset = index @ stride
    if name in OUTER_GROUP:
        channel = 0
        group_stride = 0
        for axis, s in enumerate(stride_npu):
            if s == 1:
                channel = axis
                continue
            group_stride = max(group_stride, s * shape[axis])
        offset = offset + (index[:, channel] >> 4) * (group_stride - 16)
    if name in HL_FORMATS:
        low = (offset >> 4) * 32 + (offset & 15)
        return np.stack([low, low + 16], axis=1)
    if name in WORD_FORMATS:
        return np.stack([2 * offset, 2 * offset + 1], axis=1)
    return np.stack([offset, offset], axis=1)


def kneron_write(name: str, layout: BlockedLayout, x: np.ndarray, stride_npu: list[int]) -> bytes:
    """The NPU buffer Kneron's ONNX-to-NPU conversion writes for ``x`` (zero elsewhere)."""
    offsets = kneron_offsets(name, x.shape, stride_npu)
    assert offsets.max() < layout.nbytes, "Kneron writes past the codec's buffer"
    buf = np.zeros(layout.nbytes, dtype=np.uint8)
    values = x.reshape(-1)
    if name in KL730_8BIT:
        buf[offsets[:, 0]] = values.view(np.uint8)
        return buf.tobytes()
    u16 = values.view(np.uint16).astype(np.int64)
    if name in HL_FORMATS:
        buf[offsets[:, 0]] = (u16 >> 1) & 0x7F
        buf[offsets[:, 1]] = (u16 >> 8) & 0xFF
    else:
        buf[offsets[:, 0]] = (u16 >> 8) & 0xFF if name == "HW1C16B_BE" else u16 & 0xFF
        buf[offsets[:, 1]] = u16 & 0xFF if name == "HW1C16B_BE" else (u16 >> 8) & 0xFF
    return buf.tobytes()


def kneron_read(name: str, buf: np.ndarray, shape: tuple[int, ...], stride_npu: list[int]) -> Any:
    """The tensor Kneron's NPU-to-ONNX conversion reads from ``buf`` (uint8 or uint16 view)."""
    offsets = kneron_offsets(name, shape, stride_npu)
    first, second = buf[offsets[:, 0]].astype(np.int64), buf[offsets[:, 1]].astype(np.int64)
    if name in KL730_8BIT:
        return first.astype(np.uint8).reshape(shape)
    if name in HL_FORMATS:
        word = (((first & 0x7F) | (second << 7)) << 1) & 0xFFFF
    elif name == "HW1C16B_BE":
        word = (first << 8) | second
    else:
        word = first | (second << 8)
        if name in ("8W1C16B", "RAW_16B"):
            word &= 0xFFFE
    return word.astype(np.uint16).reshape(shape)


def kl730_shape(name: str, n: int, c: int, h: int, w: int) -> tuple[int, int, int, int]:
    if name == "HW4C8B_KEEP_A":
        c = 4
    elif name == "HW4C8B_DROP_A":
        c = 3 + c % 2
    elif name in ("4W4C8B", "4W4C8BHL"):
        c = 1 + (c - 1) % 4
    return (n, c, h, w)


def random_values(name: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Unsigned values of the format's width; bit 0 clear where the device keeps 15 bits, and
    channel 3 zero for HW4C8B_DROP_A (it stores three)."""
    rng = np.random.default_rng(seed)
    if name in KL730_8BIT:
        x = rng.integers(0, 256, size=shape, dtype=np.uint8)
    else:
        x = rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)
        if name not in ("HW1C16B_LE", "HW1C16B_BE"):
            x &= np.uint16(0xFFFE)
    if name == "HW4C8B_DROP_A":
        x[:, 3:] = 0
    return x


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(
    name=st.sampled_from(KL730_FORMATS),
    n=st.integers(1, 2),
    c=st.integers(1, 40),
    h=st.integers(1, 5),
    w=st.integers(1, 37),
    role=st.sampled_from(("input", "output")),
    seed=st.integers(0, 2**16),
)
def test_codec_bytes_are_where_kneron_reads_its_strides(
    name: str, n: int, c: int, h: int, w: int, role: str, seed: int
) -> None:
    """The predicted stride_npu is the stride set Kneron's library reads the codec's bytes with:
    Kneron's read of the packed buffer gives the tensor back, and the codec unpacks what
    Kneron's conversion writes."""
    shape = kl730_shape(name, n, c, h, w)
    role = "input" if name in KL730_INPUT_ONLY else role
    bits = 8 if name in KL730_8BIT else 16
    layout = get_layout("kl730", name, shape, f"uint{bits}", role=role)
    strides = layout.attributes["stride_npu"]
    x = random_values(name, shape, seed)
    packed = layout.pack(x)
    assert np.array_equal(kneron_read(name, packed, shape, strides), x), (name, shape, strides)
    written = kneron_write(name, layout, x, strides)
    assert np.array_equal(layout.unpack(written), x), (name, shape, strides)
    # Every byte Kneron does not write is padding the codec leaves zero.
    assert bytes(packed) == written


@pytest.mark.parametrize("name", OUTER_GROUP)
@pytest.mark.parametrize(
    ("shape", "strides", "nbytes"),
    [((1, 32, 4, 5), [320, 1, 80, 16], 640), ((2, 32, 4, 5), [320, 1, 80, 16], 1280)],
)
def test_outer_group_strides_describe_one_group(
    name: str, shape: tuple[int, ...], strides: list[int], nbytes: int
) -> None:
    layout = get_layout("kl730", name, shape, "int8" if name == "1W16C8B" else "int16")
    assert layout.attributes["stride_npu"] == strides
    assert layout.nbytes == nbytes * (2 if name == "1W16C8BHL" else 1)
    # Channel 16 of batch item 0 sits at G = max(stride * size) (HL: the 8-bit offset doubled).
    group = max(s * d for s, d in zip(strides, shape, strict=True) if s != 1)
    at = layout.offset_of((0, 16, 0, 0))
    assert at == (group if name == "1W16C8B" else (group // 16) * 32)
    # For N = 2 the groups lie outside the batch: batch item 1's group 0 comes before group 1.
    if shape[0] == 2:
        assert layout.offset_of((1, 0, 0, 0)) < at


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from((*OUTER_GROUP, "16W1C8B", "RAW_16B", "8W1C16B")),
    n=st.integers(1, 2),
    c=st.integers(1, 40),
    h=st.integers(1, 4),
    w=st.integers(1, 9),
    pad=st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 2)),
    seed=st.integers(0, 2**16),
)
def test_reported_strides_in_kneron_convention_unpack_where_kneron_reads(
    name: str,
    n: int,
    c: int,
    h: int,
    w: int,
    pad: tuple[int, int, int],
    seed: int,
) -> None:
    """A device may pad more than the seed's table (longer rows, gaps between rows or batch
    items); whatever it reports in Kneron's convention, the codec reads each element where
    Kneron's formula puts it (N > 1 included: outer groups outside the batch)."""
    shape = (n, c, h, w)
    extra_row, extra_plane, extra_batch = pad
    if name in OUTER_GROUP:
        sw = 16
        sh = 16 * (w + extra_row)
        sn = sh * h + 16 * extra_batch
        strides = [sn, 1, sh, sw]
    else:
        cols = 16 if name == "16W1C8B" else 8 if name == "8W1C16B" else 1
        row = -(-w // cols) * cols + cols * extra_row
        plane = row * h + (16 * extra_plane if name == "16W1C8B" else 8 * extra_plane)
        strides = [plane * c + 16 * extra_batch, plane, row, 1]
    bits = 8 if name in KL730_8BIT else 16
    layout = layout_from_report(
        "kl730",
        "output",
        {"data_layout": name, "shape": list(shape), "stride_npu": strides},
        f"uint{bits}",
    )
    assert layout.attributes["stride_npu"] == strides
    x = random_values(name, shape, seed)
    assert np.array_equal(layout.unpack(kneron_write(name, layout, x, strides)), x)
    assert np.array_equal(kneron_read(name, layout.pack(x), shape, strides), x)


@pytest.mark.parametrize("name", ["4W4C8B", "4W4C8BHL"])
@pytest.mark.parametrize("c", [5, 16, 17])
def test_four_channel_formats_refuse_more_than_four_channels(name: str, c: int) -> None:
    dtype = "uint8" if name == "4W4C8B" else "int16"
    with pytest.raises(LayoutError, match="at most 4 channels") as info:
        get_layout("kl730", name, (1, c, 3, 5), dtype, role="input")
    assert "alias pixel 1 channel 0" in str(info.value)
    assert f"C = {c}" in str(info.value)


@pytest.mark.parametrize(
    ("shape", "strides", "match"),
    [
        ((1, 32, 4, 5), [320, 16, 80, 1], "channel stride of 1"),
        ((1, 32, 1, 5), [80, 1, 1, 16], "also has stride 1"),
        ((1, 32, 4, 5), [320, 1, 80, 8], "overlap"),
    ],
)
def test_outer_group_strides_kneron_cannot_read_are_refused(
    shape: tuple[int, ...], strides: list[int], match: str
) -> None:
    with pytest.raises(LayoutError, match=match):
        get_layout("kl730", "1W16C8B", shape, "int8", stride_npu=strides)


def test_rank_one_outer_group_tensor_above_16_channels_is_refused() -> None:
    # Kneron's group stride comes from the axes besides the channel; (C,) has none.
    with pytest.raises(LayoutError, match="needs an axis besides the channel"):
        get_layout("kl730", "1W16C8B", (17,), "int8")
    assert get_layout("kl730", "1W16C8B", (16,), "int8").attributes["stride_npu"] == [1]
