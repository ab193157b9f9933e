"""The codec at odd channel counts and odd widths (C = 1, 3, 17, 255, 256, 1000): the bytes of
the compiled path (ragged transpose blocks, padding zeroed run by run on a repacked layout) are
the bytes of the numpy fallback clearing the whole buffer, into fresh and reused buffers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npu_hil.harness.codec import engine, fastcopy, get_layout
from npu_hil.harness.errors import LayoutError

CHANNELS = (1, 3, 17, 255, 256, 1000)
LAYOUTS = (
    ("rk3588", "NC1HWC2", "int8", "output"),
    ("rk3588", "NC1HWC2", "float16", "output"),
    ("rk3588", "NHWC", "int8", "output"),
    ("rk3588", "NHWC", "uint8", "input"),
    ("kl730", "1W16C8B", "int8", "output"),
    ("kl730", "1W16C8B_CH_COMPACT", "int8", "output"),
    ("kl730", "16W1C8B", "int8", "output"),
    ("kl730", "4W4C8B", "uint8", "input"),
    ("kl730", "1W16C8BHL", "int16", "output"),
    ("kl730", "16W1C8BHL", "int16", "output"),
    ("kl730", "4W4C8BHL", "int16", "output"),
    ("kl730", "8W1C16B", "int16", "output"),
    ("rdk-s100", "strided", "uint8", "output"),
)
SLOW_OK = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _tensor(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "float16":
        return rng.standard_normal(shape, dtype=np.float32).astype(np.float16)
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    return values & ~np.array(1, dtype=dtype) if info.bits == 16 else values


def _reference(
    monkeypatch: pytest.MonkeyPatch,
    spec: tuple[str, str, str, str],
    shape: tuple[int, ...],
    tensor: np.ndarray,
) -> np.ndarray:
    """The numpy fallback's bytes, from a fresh layout (packed once: the whole buffer cleared)."""
    target, name, dtype, role = spec
    with monkeypatch.context() as patch:
        patch.setattr(fastcopy, "_copy_arrays", None)
        return get_layout(target, name, shape, dtype, role=role).pack(tensor)


@SLOW_OK
@given(
    spec=st.sampled_from(LAYOUTS),
    channels=st.sampled_from(CHANNELS),
    h=st.integers(1, 9),
    w=st.integers(1, 40).map(lambda n: 2 * n + 1),
    seed=st.integers(0, 2**16),
)
def test_odd_shapes_pack_as_the_fallback_does(
    monkeypatch: pytest.MonkeyPatch,
    spec: tuple[str, str, str, str],
    channels: int,
    h: int,
    w: int,
    seed: int,
) -> None:
    target, name, dtype, role = spec
    shape = (1, channels, h, w)
    try:
        layout = get_layout(target, name, shape, dtype, role=role)
    except LayoutError:
        return  # the layout does not take this channel count
    tensor = _tensor(shape, dtype, seed)
    want = _reference(monkeypatch, spec, shape, tensor)
    with monkeypatch.context() as patch:
        patch.setattr(fastcopy, "MIN_KERNEL_BYTES", 0)  # even tiny pieces through the kernel
        fresh = layout.pack(tensor)  # first pack: the whole buffer cleared
        reused = np.full(layout.nbytes, 0xA5, np.uint8)  # stale bytes where the padding goes
        layout.pack(tensor, out=reused)  # second: the padding runs, when regular enough
        again = np.full(layout.nbytes, 0x5A, np.uint8)
        layout.pack(tensor, out=again)
        assert np.array_equal(fresh, want)
        assert np.array_equal(reused, want)
        assert np.array_equal(again, want)
        back = np.full_like(tensor, 7)
        assert np.array_equal(layout.unpack(reused, out=back), tensor, equal_nan=True)
        assert np.array_equal(layout.unpack(reused), tensor, equal_nan=True)


@pytest.mark.parametrize(
    ("spec", "shape"),
    [
        (("rk3588", "NHWC", "uint8", "input"), (1, 3, 31, 1917)),
        (("rk3588", "NC1HWC2", "int8", "output"), (1, 1000, 4, 81)),
        (("rk3588", "NC1HWC2", "int8", "output"), (1, 255, 8, 81)),
        (("kl730", "16W1C8B", "int8", "output"), (1, 17, 20, 81)),
    ],
)
def test_regular_padding_is_zeroed_run_by_run(
    monkeypatch: pytest.MonkeyPatch, spec: tuple[str, str, str, str], shape: tuple[int, ...]
) -> None:
    """These layouts' padding is a few strided runs, so a repack zeroes only them, and the
    runs cover exactly the padding mask."""
    target, name, dtype, role = spec
    layout = get_layout(target, name, shape, dtype, role=role)
    tensor = _tensor(shape, dtype, 1)
    layout.pack(tensor)
    out = np.full(layout.nbytes, 0xA5, np.uint8)
    layout.pack(tensor, out=out)
    runs = layout._padding_runs()
    assert runs, f"{name} {shape}: padding cleared as a whole buffer"
    covered = np.zeros(layout.nbytes, bool)
    for start, length, count, stride, count2, stride2 in runs:
        for g in range(count2):
            for k in range(count):
                first = start + g * stride2 + k * stride
                assert not covered[first : first + length].any(), "runs overlap"
                covered[first : first + length] = True
    assert np.array_equal(covered, layout.padding_mask())
    assert np.array_equal(out, _reference(monkeypatch, spec, shape, tensor))


def test_scattered_padding_clears_the_buffer() -> None:
    """One padding byte in four (4W4C8B's RGB pixels): too short to zero run by run."""
    layout = get_layout("kl730", "4W4C8B", (1, 3, 20, 81), "uint8", role="input")
    tensor = _tensor((1, 3, 20, 81), "uint8", 2)
    layout.pack(tensor)
    layout.pack(tensor)
    assert layout._padding_runs() is None


@pytest.mark.slow
@given(
    pattern=st.lists(
        st.tuples(st.integers(0, 40), st.integers(1, 9), st.integers(1, 6), st.integers(0, 30)),
        min_size=0,
        max_size=6,
    )
)
def test_strided_runs_rebuild_the_mask(pattern: list[tuple[int, int, int, int]]) -> None:
    """Any mask made of repeated runs: the runs found are disjoint and cover it exactly (or
    the planner declines)."""
    mask = np.zeros(2000, bool)
    pos = 0
    for gap, length, count, spacing in pattern:
        pos += gap
        for _ in range(count):
            mask[pos : pos + length] = True
            pos += length + spacing + 1
    runs = engine.strided_runs(mask)
    if runs is None:
        return
    rebuilt = np.zeros_like(mask)
    for start, length, count, stride, count2, stride2 in runs:
        for g in range(count2):
            for k in range(count):
                first = start + g * stride2 + k * stride
                assert not rebuilt[first : first + length].any()
                rebuilt[first : first + length] = True
    assert np.array_equal(rebuilt, mask)
