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

from harness.codec import BlockedLayout, get_layout

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
# and RAW_* do not pad; channels pad to the group (16, or 4); outer mode (1W16C8B, 1W16C8BHL,
# 4W4C8B* with C > 4) stores all rows of group 0, then group 1...; inner mode (*_CH_COMPACT) the
# groups of a pixel one after another; HL formats turn each 16-byte entry of the 8-bit layout
# into an L entry followed by an H entry. Below, that text as a formula, for 4-D tensors.

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
    _, channels, rows, cols = shape
    row = -(-cols // ROW_COLUMNS.get(name, 1)) * ROW_COLUMNS.get(name, 1)
    group = PIXEL_GROUP.get(name)
    if group is None:  # one plane per channel
        element = ((n * channels + c) * rows + h) * row + w
    else:
        padded = -(-channels // group) * group
        if name in INNER or padded == group:
            element = ((n * rows + h) * row + w) * padded + c
        else:
            plane = rows * row * group
            element = n * padded * rows * row + (c // group) * plane + (h * row + w) * group
            element = element + c % group
    element = np.broadcast_to(element, shape)
    if name in KL730_8BIT:
        return element[..., None]
    if "8BHL" in name:  # the 8-bit layout, each entry split into an L entry then an H entry
        low = (element // 16) * 32 + element % 16
        return np.stack([low, low + 16], axis=-1)
    return np.stack([2 * element, 2 * element + 1], axis=-1)  # 16-bit lanes, in place


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
