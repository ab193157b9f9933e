"""Two byte slots one block apart (KL730 4W4C8BHL, 16W1C8BHL), placed as blocks in one copy.

The blocked split and join (``fastcopy.split16_blocks`` / ``join16_blocks``) are checked against
a per-value reference, compiled at every instruction-set level the CPU runs and as the numpy
fallback; the layouts that take them pack the bytes the plane-by-plane path packs (and the
numpy fallback with it), fresh and into stale buffers, and unpack what they packed.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npu_hil.harness.codec import fastcopy, get_layout, slot_blocks
from npu_hil.harness.errors import LayoutError
from tests.codec.conftest import ISA_LEVELS, at_level

BLOCKS = (1, 2, 3, 4, 8, 16, 24, 32, 48)
FIXTURES_OK = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(params=(*ISA_LEVELS, "numpy"))
def level(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The blocked split at one instruction-set level, or the numpy fallback ("numpy")."""
    yield from at_level(request, monkeypatch, ("_split16_blocks", "_join16_blocks"))


def _reference(values: np.ndarray, block: int, mode: int, swap: bool) -> np.ndarray:
    """Value by value: the first-slot byte at ``(i // B) * 2B + i % B``, the second ``B`` on,
    zero in the unused bytes of a partial last block."""
    rows = values.reshape(-1, values.shape[-1]).view(np.uint16)
    n = rows.shape[1]
    nb = -(-n // block)
    out = np.zeros((rows.shape[0], nb * 2 * block), np.uint8)
    for r, row in enumerate(rows.tolist()):
        for i, v in enumerate(row):
            low = (v >> 1) & 0x7F if mode == 1 else v & (0xFE if mode == 2 else 0xFF)
            first, second = (v >> 8, low) if swap else (low, v >> 8)
            at = (i // block) * 2 * block + i % block
            out[r, at], out[r, at + block] = first, second
    return out.reshape((*values.shape[:-1], nb, 2, block))


@FIXTURES_OK
@given(
    rows=st.integers(1, 5),
    n=st.integers(1, 70),
    block=st.sampled_from(BLOCKS),
    mode=st.sampled_from((0, 1, 2)),
    swap=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_blocked_split_and_join(
    level: str, rows: int, n: int, block: int, mode: int, swap: bool, seed: int
) -> None:
    values = np.random.default_rng(seed).integers(0, 1 << 16, (rows, n), dtype=np.uint16)
    want = _reference(values, block, mode, swap)
    stale = np.full(want.shape, 0xA5, np.uint8)  # the unused bytes must be written as zero
    got = fastcopy.split16_blocks(values, block, mode, swap, out=stale)
    assert got is stale
    assert np.array_equal(got, want), level
    back = np.full_like(values, 0x5A5A)
    fastcopy.join16_blocks(got, back, block, mode, swap)
    assert np.array_equal(back, values & 0xFFFE if mode else values), level


def test_the_kernel_checks_its_sizes() -> None:
    module: ModuleType = pytest.importorskip("npu_hil.harness.codec._kernels")
    values = np.zeros(10, np.uint16)
    with pytest.raises(ValueError, match="rows of"):
        module.split16_blocks(values, np.zeros(15, np.uint8), 5, 4, 0, 0)
    with pytest.raises(ValueError, match="mode"):
        module.split16_blocks(values, np.zeros(32, np.uint8), 5, 4, 3, 0)
    with pytest.raises(ValueError, match="rows of"):
        module.join16_blocks(values, np.zeros(31, np.uint8), 5, 4, 0, 0)


@pytest.mark.parametrize(
    ("name", "shape", "block"),
    [
        ("4W4C8BHL", (1, 3, 4, 9), 4),
        ("16W1C8BHL", (1, 17, 3, 41), 16),
        ("16W1C8BHL", (1, 2, 3, 32), 16),
        ("1W16C8BHL", (1, 17, 3, 9), None),  # the slot sits above the channels, not W
    ],
)
def test_which_layouts_go_as_blocks(name: str, shape: tuple[int, ...], block: int | None) -> None:
    assert slot_blocks.slot_block(get_layout("kl730", name, shape, "int16")) == block


def _planes_reference(name: str, shape: tuple[int, ...], tensor: np.ndarray) -> np.ndarray:
    """The plane-by-plane path through the numpy fallback, from a fresh layout."""
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(slot_blocks, "ENABLED", False)
        mp.setattr(fastcopy, "_copy_arrays", None)
        mp.setattr(fastcopy, "_split16", None)
        return get_layout("kl730", name, shape, "int16").pack(tensor)
    finally:
        mp.undo()


@FIXTURES_OK
@given(
    name=st.sampled_from(("4W4C8BHL", "16W1C8BHL")),
    channels=st.sampled_from((1, 2, 3, 4, 17, 255)),
    h=st.integers(1, 6),
    w=st.integers(1, 60),
    seed=st.integers(0, 2**16),
)
def test_layouts_pack_as_the_planes_do(
    level: str,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    channels: int,
    h: int,
    w: int,
    seed: int,
) -> None:
    shape = (1, channels, h, w)
    try:
        layout = get_layout("kl730", name, shape, "int16")
    except LayoutError:
        return  # 4W4C8BHL takes at most 4 channels
    tensor = np.random.default_rng(seed).integers(-(1 << 15), 1 << 15, shape, dtype=np.int16)
    tensor &= ~np.int16(1)  # bit 0 is not stored
    want = _planes_reference(name, shape, tensor)
    with monkeypatch.context() as patch:
        patch.setattr(fastcopy, "MIN_KERNEL_BYTES", 0)
        fresh = layout.pack(tensor)
        stale = np.full(layout.nbytes, 0xA5, np.uint8)
        layout.pack(tensor, out=stale)  # a repack: the padding zeroed run by run, if at all
        assert np.array_equal(fresh, want), level
        assert np.array_equal(stale, want), level
        back = np.full_like(tensor, 7)
        assert np.array_equal(layout.unpack(stale, out=back), tensor), level
        assert np.array_equal(layout.unpack(bytes(fresh)), tensor), level


def test_a_large_layout_bypasses_the_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks over the scratch limit get a buffer of their own, the same bytes."""
    shape = (1, 3, 8, 45)
    layout = get_layout("kl730", "4W4C8BHL", shape, "int16")
    tensor = np.arange(np.prod(shape), dtype=np.int16).reshape(shape) * np.int16(2)
    want = layout.pack(tensor)
    monkeypatch.setattr(slot_blocks, "SCRATCH_LIMIT", 16)
    assert np.array_equal(layout.pack(tensor), want)
    assert np.array_equal(layout.unpack(want), tensor)
