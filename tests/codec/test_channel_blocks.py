"""Two byte slots one channel block apart (KL730 1W16C8BHL), packed as whole entries.

A pixel's 16 channels are gathered by one 16-bit transpose and split into an entry's 16 low
and 16 high bytes at once; the bytes must be the ones the plane-by-plane path packs through
the numpy fallback, fresh and into stale buffers (the entries fill the buffer, so nothing else
clears it), and unpack back, at every instruction-set level and as the numpy fallback.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npu_hil.harness.codec import fastcopy, get_layout, slot_blocks
from tests.codec.conftest import ISA_LEVELS, at_level

FIXTURES_OK = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(params=(*ISA_LEVELS, "numpy"))
def level(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    yield from at_level(request, monkeypatch, ("_copy_arrays", "_split16_blocks", "_join16_blocks"))


@pytest.mark.parametrize(
    ("name", "channels", "plan"),
    [
        ("1W16C8BHL", 17, (1, 16, True)),
        ("1W16C8BHL", 1000, (1, 16, True)),
        ("1W16C8BHL", 16, None),  # one block: a single channel dim
        ("16W1C8BHL", 17, None),  # the slot sits above W (slot_blocks.slot_block)
    ],
)
def test_which_layouts_go_as_channel_blocks(
    name: str, channels: int, plan: tuple[int, int, bool] | None
) -> None:
    layout = get_layout("kl730", name, (1, channels, 3, 5), "int16")
    assert slot_blocks.channel_block(layout) == plan


def _planes_reference(shape: tuple[int, ...], tensor: np.ndarray) -> np.ndarray:
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(slot_blocks, "ENABLED", False)
        mp.setattr(fastcopy, "_copy_arrays", None)
        mp.setattr(fastcopy, "_split16", None)
        return get_layout("kl730", "1W16C8BHL", shape, "int16").pack(tensor)
    finally:
        mp.undo()


@FIXTURES_OK
@given(
    channels=st.sampled_from((17, 31, 32, 33, 48, 255, 256)),
    h=st.integers(1, 5),
    w=st.integers(1, 40),
    seed=st.integers(0, 2**16),
)
def test_entries_pack_as_the_planes_do(
    level: str, monkeypatch: pytest.MonkeyPatch, channels: int, h: int, w: int, seed: int
) -> None:
    shape = (1, channels, h, w)
    layout = get_layout("kl730", "1W16C8BHL", shape, "int16")
    tensor = np.random.default_rng(seed).integers(-(1 << 15), 1 << 15, shape, dtype=np.int16)
    want = _planes_reference(shape, tensor)
    with monkeypatch.context() as patch:
        patch.setattr(fastcopy, "MIN_KERNEL_BYTES", 0)
        fresh = layout.pack(tensor)
        stale = np.full(layout.nbytes, 0xA5, np.uint8)
        layout.pack(tensor, out=stale)
        assert np.array_equal(fresh, want), level
        assert np.array_equal(stale, want), level
        back = np.full_like(tensor, 7)
        unpacked = layout.unpack(stale, out=back)
        assert np.array_equal(unpacked, tensor & ~np.int16(1)), level  # bit 0 is not stored
        assert np.array_equal(layout.unpack(bytes(fresh)), unpacked), level


def test_a_strided_tensor_packs_the_same() -> None:
    shape = (1, 40, 4, 6)
    layout = get_layout("kl730", "1W16C8BHL", shape, "int16")
    wide = np.random.default_rng(3).integers(-(1 << 15), 1 << 15, (1, 40, 4, 12), dtype=np.int16)
    tensor = wide[..., ::2]
    assert np.array_equal(layout.pack(tensor), layout.pack(np.ascontiguousarray(tensor)))


def test_a_large_layout_bypasses_the_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    shape = (1, 33, 4, 7)
    layout = get_layout("kl730", "1W16C8BHL", shape, "int16")
    tensor = np.arange(np.prod(shape), dtype=np.int16).reshape(shape) * np.int16(2)
    want = layout.pack(tensor)
    monkeypatch.setattr(slot_blocks, "SCRATCH_LIMIT", 16)
    assert np.array_equal(layout.pack(tensor), want)
    assert np.array_equal(layout.unpack(want), tensor)
