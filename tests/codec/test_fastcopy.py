"""``npu_hil.harness.codec.fastcopy.strided_copy`` and the compiled kernel behind it.

Every copy is checked against ``np.copyto`` on a twin buffer: same bytes inside the view, and
every byte outside it untouched (the buffers start zeroed, the sources hold no zero byte). The
kernel is exercised directly (``copy_arrays``, ``copy_strided``) at every instruction-set level
the CPU runs, and through the wrapper with its small-copy cut-off lowered to zero; the numpy
fallback is exercised by switching the kernel off. Tests that need the compiled module skip
without it; the rest pass either way.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

from npu_hil.harness.codec import fastcopy
from npu_hil.harness.codec.fastcopy import strided_copy

ISA_LEVELS = ("base", "avx2", "avx512")
FIXTURES_OK = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
"""The fixtures here (an ISA level, a patched module attribute) hold for every example."""
UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


# ------------------------------------------------------------------------------ fixtures


def _kernels_module() -> ModuleType:
    module: ModuleType = pytest.importorskip("npu_hil.harness.codec._kernels")
    return module


@pytest.fixture(params=ISA_LEVELS)
def kernels(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    """The compiled module, switched to one instruction-set level (skipped if the CPU lacks it)."""
    module = _kernels_module()
    level = request.param
    got = module.set_isa(level)
    try:
        if got != level:
            pytest.skip(f"this CPU runs no {level} kernels (best: {got})")
        yield module
    finally:
        module.set_isa(None)


@pytest.fixture
def no_cutoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Send even the smallest copies through the kernel."""
    monkeypatch.setattr(fastcopy, "MIN_KERNEL_BYTES", 0)


@pytest.fixture
def numpy_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Force the numpy fallback."""
    monkeypatch.setattr(fastcopy, "_copy_arrays", None)


# ------------------------------------------------------------------------------- layouts


@dataclass(frozen=True)
class Layout:
    """A strided placement of ``shape`` in a byte buffer: axes laid out innermost-first in
    ``order`` reversed, each ``pad`` bytes apart beyond its span, elements ``gap`` bytes apart
    beyond their itemsize, starting ``offset`` bytes in."""

    shape: tuple[int, ...]
    itemsize: int
    order: tuple[int, ...]  # axes, outermost first
    pad: tuple[int, ...]
    gap: int = 0
    offset: int = 0

    @property
    def strides(self) -> tuple[int, ...]:
        strides = [0] * len(self.shape)
        step = self.itemsize + self.gap
        for axis in reversed(self.order):
            strides[axis] = step
            step = step * self.shape[axis] + self.pad[axis]
        return tuple(strides)

    @property
    def nbytes(self) -> int:
        """Buffer bytes needed, with a little slack after the view."""
        if 0 in self.shape:
            return self.offset + 8
        span = sum((n - 1) * s for n, s in zip(self.shape, self.strides, strict=True))
        return self.offset + span + self.itemsize + self.gap + 8


def make_view(layout: Layout, buf: np.ndarray, dtype: Any) -> np.ndarray:
    view: np.ndarray = np.ndarray(
        layout.shape, dtype=dtype, buffer=buf, offset=layout.offset, strides=layout.strides
    )
    return view


def nonzero_bytes(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, 256, size=n, dtype=np.uint8)


@st.composite
def shapes(draw: st.DrawFn, max_elems: int = 6000) -> tuple[int, ...]:
    rank = draw(st.integers(1, 6))
    dims = []
    total = 1
    for _ in range(rank):
        n = draw(st.one_of(st.integers(1, 5), st.integers(6, 40), st.sampled_from([16, 32, 33])))
        n = max(1, min(n, max_elems // total))
        dims.append(n)
        total *= n
    return tuple(dims)


@st.composite
def layouts(draw: st.DrawFn, shape: tuple[int, ...], itemsize: int) -> Layout:
    rank = len(shape)
    order = tuple(draw(st.permutations(range(rank))))
    pad = tuple(draw(st.lists(st.sampled_from([0, 0, 0, 1, 3, 16]), min_size=rank, max_size=rank)))
    gap = draw(st.sampled_from([0, 0, 0, 1, 2, itemsize]))
    offset = draw(st.integers(0, 7))
    return Layout(shape, itemsize, order, pad, gap, offset)


@st.composite
def copy_cases(draw: st.DrawFn) -> tuple[Layout, Layout, int]:
    shape = draw(shapes())
    itemsize = draw(st.sampled_from([1, 1, 2, 2, 4, 8]))
    return draw(layouts(shape, itemsize)), draw(layouts(shape, itemsize)), itemsize


@st.composite
def channel_cases(draw: st.DrawFn) -> tuple[Layout, Layout, int]:
    """Packs and unpacks of channels into pixels: planes on one side, K channels per pixel on
    the other (dense, in wider pixels, in groups, with row pitch), as the NPU layouts do."""
    itemsize = draw(st.sampled_from([1, 1, 1, 2, 2, 4, 8]))
    c = draw(st.sampled_from([2, 3, 4, 5, 6, 7, 8, 12, 16, 17, 32]))
    shape = (draw(st.integers(1, 3)), c, draw(st.integers(1, 30)), draw(st.integers(1, 70)))
    pixel = max(c, draw(st.sampled_from([c, c, 4, 8, c + 1, c + 3])))
    pitch = draw(st.sampled_from([0, 0, 5 * itemsize]))
    order = draw(st.sampled_from([(0, 2, 3, 1), (0, 2, 3, 1), (2, 3, 0, 1)]))
    pad = [0, 0, 0, 0]
    pad[1] = (pixel - c) * itemsize
    pad[order[1]] = pitch
    packed = Layout(shape, itemsize, order, tuple(pad), 0, draw(st.integers(0, 7)))
    planes = Layout(
        shape,
        itemsize,
        (0, 1, 2, 3),
        (0, 0, draw(st.sampled_from([0, 0, 3 * itemsize])), 0),
        0,
        draw(st.integers(0, 7)),
    )
    if draw(st.booleans()):
        return packed, planes, itemsize
    return planes, packed, itemsize


def run_case(
    dst_layout: Layout, src_layout: Layout, itemsize: int, copy: Any, seed: int = 0
) -> None:
    """Copy with ``copy(dst, src)`` and compare buffers with an ``np.copyto`` twin."""
    __tracebackhide__ = True
    dtype = UNSIGNED[itemsize]
    src_buf = nonzero_bytes(src_layout.nbytes, seed)
    src_before = src_buf.copy()
    src = make_view(src_layout, src_buf, dtype)
    got_buf = np.zeros(dst_layout.nbytes, np.uint8)
    want_buf = np.zeros(dst_layout.nbytes, np.uint8)
    np.copyto(make_view(dst_layout, want_buf, dtype), src)
    copy(make_view(dst_layout, got_buf, dtype), src)
    if not np.array_equal(got_buf, want_buf):
        bad = np.flatnonzero(got_buf != want_buf)
        raise AssertionError(
            f"{bad.size} bytes differ (first at {bad[:8].tolist()}); dst strides "
            f"{dst_layout.strides}, src strides {src_layout.strides}, shape {dst_layout.shape}, "
            f"itemsize {itemsize}"
        )
    assert np.array_equal(src_buf, src_before), "the source was written to"


def kernel_copy(kernels: ModuleType) -> Any:
    def copy(dst: np.ndarray, src: np.ndarray) -> None:
        assert kernels.copy_arrays(dst, src) is True

    return copy


def raw_copy(kernels: ModuleType) -> Any:
    def copy(dst: np.ndarray, src: np.ndarray) -> None:
        kernels.copy_strided(
            dst.__array_interface__["data"][0],
            dst.strides,
            src.__array_interface__["data"][0],
            src.strides,
            dst.shape,
            dst.itemsize,
        )

    return copy


# ------------------------------------------------------------------------ property tests


@pytest.mark.slow
@FIXTURES_OK
@given(case=copy_cases(), seed=st.integers(0, 2**16))
def test_kernel_matches_copyto_on_random_layouts(
    kernels: ModuleType, case: tuple[Layout, Layout, int], seed: int
) -> None:
    dst_layout, src_layout, itemsize = case
    run_case(dst_layout, src_layout, itemsize, kernel_copy(kernels), seed)


@pytest.mark.slow
@FIXTURES_OK
@given(case=copy_cases(), seed=st.integers(0, 2**16))
def test_raw_address_entry_matches_copyto(
    kernels: ModuleType, case: tuple[Layout, Layout, int], seed: int
) -> None:
    dst_layout, src_layout, itemsize = case
    run_case(dst_layout, src_layout, itemsize, raw_copy(kernels), seed)


@pytest.mark.slow
@FIXTURES_OK
@given(case=channel_cases(), seed=st.integers(0, 2**16))
def test_kernel_matches_copyto_on_channel_layouts(
    kernels: ModuleType, case: tuple[Layout, Layout, int], seed: int
) -> None:
    dst_layout, src_layout, itemsize = case
    run_case(dst_layout, src_layout, itemsize, kernel_copy(kernels), seed)


@pytest.mark.slow
@FIXTURES_OK
@given(case=st.one_of(copy_cases(), channel_cases()), seed=st.integers(0, 2**16))
def test_strided_copy_matches_copyto(
    no_cutoff: None, case: tuple[Layout, Layout, int], seed: int
) -> None:
    dst_layout, src_layout, itemsize = case
    run_case(dst_layout, src_layout, itemsize, strided_copy, seed)


@pytest.mark.slow
@FIXTURES_OK
@given(case=st.one_of(copy_cases(), channel_cases()), seed=st.integers(0, 2**16))
def test_fallback_matches_copyto(
    numpy_only: None, case: tuple[Layout, Layout, int], seed: int
) -> None:
    dst_layout, src_layout, itemsize = case
    run_case(dst_layout, src_layout, itemsize, strided_copy, seed)


@pytest.mark.slow
@FIXTURES_OK
@given(
    shape=shapes(max_elems=3000),
    itemsize=st.sampled_from([1, 2]),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_pack_then_unpack_through_one_layout(
    no_cutoff: None, shape: tuple[int, ...], itemsize: int, seed: int, data: st.DataObject
) -> None:
    """What the layout engine does: a contiguous tensor into a strided view and back."""
    layout = data.draw(layouts(shape, itemsize))
    dtype = UNSIGNED[itemsize]
    tensor = nonzero_bytes(int(np.prod(shape)) * itemsize, seed).view(dtype).reshape(shape)
    buf = np.zeros(layout.nbytes, np.uint8)
    view = make_view(layout, buf, dtype)
    strided_copy(view, tensor)
    want = np.zeros_like(buf)
    np.copyto(make_view(layout, want, dtype), tensor)
    assert np.array_equal(buf, want)
    back = np.empty_like(tensor)
    strided_copy(back, view)
    assert np.array_equal(back, tensor)


# ----------------------------------------------------------------- the layouts that matter


@dataclass(frozen=True)
class Pattern:
    name: str
    shape: tuple[int, ...]  # the logical (contiguous) tensor
    strides: tuple[int, ...]  # of the packed view
    nbytes: int  # of the packed buffer
    itemsize: int = 1
    plan: str = ""  # what the kernel should make of the pack, as describe() starts


def _patterns() -> list[Pattern]:
    h, w = 37, 53  # nothing a multiple of a vector width
    c1 = 16
    g, hw = 3, 9 * 11
    hh, ww = 9, 11
    return [
        Pattern("4W4C8B / HW4C8B_DROP_A", (1, 3, h, w), (0, 1, w * 4, 4), h * w * 4, 1, "t2d/il"),
        Pattern("HW4C8B_KEEP_A", (1, 4, h, w), (0, 1, w * 4, 4), h * w * 4, 1, "t2d/il"),
        Pattern(
            "1W16C8B / NC1HWC2",
            (1, g, c1, hh, ww),
            (0, hw * c1, 1, ww * c1, c1),
            g * hw * c1,
            1,
            "t2d/bt",
        ),
        Pattern(
            "1W16C8B_CH_COMPACT",
            (1, g, c1, hh, ww),
            (0, c1, 1, ww * g * c1, g * c1),
            g * hw * c1,
            1,
            "t2d/bt",
        ),
        Pattern(
            "1W16C8BHL",
            (1, 2, c1, hh, ww, 2),
            (0, hw * 32, 1, ww * 32, 32, 16),
            2 * hw * 32,
            1,
            "t2d/bt",
        ),
        Pattern("RKNN NHWC u8", (1, 3, h, w), (0, 1, w * 3, 3), h * w * 3, 1, "t2d/il"),
        Pattern("RKNN NHWC f16", (1, 3, h, w), (0, 2, w * 6, 6), h * w * 6, 2, "t2d/il"),
        Pattern(
            "RKNN NHWC u8 row stride",
            (1, 3, h, w),
            (0, 1, (w + 5) * 3, 3),
            h * (w + 5) * 3,
            1,
            "t2d/il",
        ),
        Pattern(
            "16W1C8B row pitch", (1, 8, 10, 100), (0, 10 * 112, 112, 1), 8 * 10 * 112, 1, "rows"
        ),
        Pattern(
            "RKNN NC1HWC2 f16 (C2=8)",
            (1, 2, 8, hh, ww),
            (0, hw * 16, 2, ww * 16, 16),
            2 * hw * 16,
            2,
            "t2d/il",
        ),
        Pattern("HWC K=8 u8", (1, 8, h, w), (0, 1, w * 8, 8), h * w * 8, 1, "t2d/il"),
        Pattern("HWC K=2 in 4 u16", (1, 2, h, w), (0, 2, w * 8, 8), h * w * 8, 2, "t2d/il"),
        Pattern("HWC K=5 in 8 u8", (1, 5, h, w), (0, 1, w * 8, 8), h * w * 8, 1, "t2d/il"),
        Pattern("HWC K=3 in 6 u8", (1, 3, h, w), (0, 1, w * 6, 6), h * w * 6, 1, "t2d/il"),
        Pattern("HWC K=32 u8", (1, 32, hh, ww), (0, 1, ww * 32, 32), hw * 32, 1, "t2d/bt"),
        Pattern("HWC K=12 u8", (1, 12, hh, ww), (0, 1, ww * 12, 12), hw * 12, 1, "t2d/bt"),
    ]


PATTERNS = _patterns()


def packed_view(p: Pattern, buf: np.ndarray) -> np.ndarray:
    view: np.ndarray = np.ndarray(
        p.shape, dtype=UNSIGNED[p.itemsize], buffer=buf, strides=p.strides
    )
    return view


def logical(p: Pattern, seed: int = 1) -> np.ndarray:
    n = int(np.prod(p.shape))
    return nonzero_bytes(n * p.itemsize, seed).view(UNSIGNED[p.itemsize]).reshape(p.shape)


@pytest.mark.parametrize("pattern", PATTERNS, ids=[p.name for p in PATTERNS])
@pytest.mark.parametrize("direction", ["pack", "unpack"])
def test_patterns_through_the_kernel(kernels: ModuleType, pattern: Pattern, direction: str) -> None:
    tensor = logical(pattern)
    want_buf = np.zeros(pattern.nbytes, np.uint8)
    np.copyto(packed_view(pattern, want_buf), tensor)
    if direction == "pack":
        buf = np.zeros(pattern.nbytes, np.uint8)
        assert kernels.copy_arrays(packed_view(pattern, buf), tensor) is True
        assert np.array_equal(buf, want_buf)
    else:
        out = np.zeros_like(tensor)
        assert kernels.copy_arrays(out, packed_view(pattern, want_buf)) is True
        assert np.array_equal(out, tensor)


@pytest.mark.parametrize("pattern", PATTERNS, ids=[p.name for p in PATTERNS])
def test_patterns_take_the_fast_path(pattern: Pattern) -> None:
    module = _kernels_module()
    tensor = logical(pattern)
    plan = module.describe(pattern.strides, tensor.strides, pattern.shape, pattern.itemsize)
    assert plan.startswith(pattern.plan), plan


@pytest.mark.parametrize("pattern", PATTERNS, ids=[p.name for p in PATTERNS])
@pytest.mark.parametrize("mode", ["kernel", "fallback"])
def test_patterns_through_strided_copy(
    monkeypatch: pytest.MonkeyPatch, pattern: Pattern, mode: str
) -> None:
    if mode == "fallback":
        monkeypatch.setattr(fastcopy, "_copy_arrays", None)
    tensor = logical(pattern)
    buf = np.zeros(pattern.nbytes, np.uint8)
    want = np.zeros(pattern.nbytes, np.uint8)
    strided_copy(packed_view(pattern, buf), tensor)
    np.copyto(packed_view(pattern, want), tensor)
    assert np.array_equal(buf, want)
    back = np.zeros_like(tensor)
    strided_copy(back, packed_view(pattern, buf))
    assert np.array_equal(back, tensor)


def test_large_transpose_edges(kernels: ModuleType) -> None:
    """Tile and block edges of the blocked transpose, both ways, at every unit size."""
    rng = np.random.default_rng(7)
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        for rows, cols in ((300, 1111), (47, 2050), (1025, 33)):
            a = rng.integers(1, 200, size=(rows, cols)).astype(dtype)
            out = np.zeros((cols, rows), dtype)
            assert kernels.copy_arrays(out, a.T) is True
            assert np.array_equal(out, a.T)
            out2 = np.zeros((rows, cols), dtype)
            assert kernels.copy_arrays(out2.T, out) is True
            assert np.array_equal(out2, a)


def test_gapped_pixels_leave_the_gap_alone(kernels: ModuleType) -> None:
    """RGB into 4-byte pixels, long enough for every chunk of the staged kernel."""
    h, w = 67, 301
    rgb = nonzero_bytes(3 * h * w, 3).reshape(1, 3, h, w)
    buf = np.full(h * w * 4 + 1, 0xA5, np.uint8)  # the gap and one byte past the end
    view = as_strided(buf, rgb.shape, (0, 1, w * 4, 4))
    assert kernels.copy_arrays(view, rgb) is True
    pixels = buf[:-1].reshape(h, w, 4)
    assert np.array_equal(pixels[..., :3].transpose(2, 0, 1), rgb[0])
    assert (pixels[..., 3] == 0xA5).all()
    assert buf[-1] == 0xA5


# ------------------------------------------------------------------------ edge cases


@pytest.mark.parametrize("mode", ["kernel", "fallback"])
def test_edge_cases(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setattr(fastcopy, "MIN_KERNEL_BYTES", 0)
    if mode == "fallback":
        monkeypatch.setattr(fastcopy, "_copy_arrays", None)

    # empty arrays
    strided_copy(np.zeros((0, 3), np.uint8), np.ones((0, 3), np.uint8))
    # 0-d
    d0 = np.zeros((), np.uint16)
    strided_copy(d0, np.array(513, np.uint16))
    assert d0 == 513
    # negative strides (numpy does them)
    src = np.arange(24, dtype=np.uint8).reshape(4, 6)
    dst = np.zeros((4, 6), np.uint8)
    strided_copy(dst[::-1], src)
    assert np.array_equal(dst, src[::-1])
    # broadcast source (zero strides)
    dst = np.zeros((5, 7), np.uint16)
    strided_copy(dst, np.broadcast_to(np.arange(7, dtype=np.uint16), (5, 7)))
    assert np.array_equal(dst, np.tile(np.arange(7, dtype=np.uint16), (5, 1)))
    # overlapping source and destination: numpy's semantics
    buf = np.arange(64, dtype=np.uint8)
    want = buf.copy()
    np.copyto(want[1:33], want[0:32].copy())
    strided_copy(buf[1:33], buf[0:32])
    assert np.array_equal(buf, want)
    # differing dtypes of one itemsize: bits, not values
    out = np.zeros(4, np.uint8)
    strided_copy(out, np.array([-1, -2, 3, -128], np.int8))
    assert out.tolist() == [255, 254, 3, 128]
    half = np.array([1.0, -2.5, np.inf], np.float16)
    bits = np.zeros(3, np.uint16)
    strided_copy(bits, half)
    assert np.array_equal(bits, half.view(np.uint16))
    # object arrays keep numpy's value semantics
    objs = np.empty(3, object)
    strided_copy(objs, np.array(["a", None, 3], object))
    assert objs.tolist() == ["a", None, 3]
    # dtypes with no buffer export (numpy copies those)
    stamps = np.arange(3000).astype("datetime64[s]")
    out_stamps = np.zeros(6000, "datetime64[s]")
    strided_copy(out_stamps[::2], stamps)
    assert np.array_equal(out_stamps[::2], stamps)
    # rank beyond the kernel's
    big = np.arange(2**11, dtype=np.uint8).reshape((2,) * 11)
    out11 = np.zeros_like(big)
    strided_copy(out11.transpose(), big.transpose())
    assert np.array_equal(out11, big)


def test_mismatches_are_refused() -> None:
    with pytest.raises(ValueError, match="shape"):
        strided_copy(np.zeros((2, 3), np.uint8), np.zeros((3, 2), np.uint8))
    with pytest.raises(ValueError, match="itemsize"):
        strided_copy(np.zeros((2, 3), np.uint8), np.zeros((2, 3), np.uint16))


def test_read_only_destination_is_refused() -> None:
    dst = np.zeros(4096, np.uint8)
    dst.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        strided_copy(dst, np.ones(4096, np.uint8))


def test_kernel_declines_what_it_does_not_take() -> None:
    module = _kernels_module()
    a = np.zeros((4, 4), np.uint8)
    ro = np.zeros((4, 4), np.uint8)
    ro.flags.writeable = False
    assert module.copy_arrays(ro, a) is False  # read-only dst
    assert module.copy_arrays(a, np.zeros((4, 4), np.uint16)) is False  # itemsize
    assert module.copy_arrays(a, np.zeros((4, 5), np.uint8)) is False  # shape
    assert module.copy_arrays(a[::-1], np.ones((4, 4), np.uint8)) is False  # negative stride
    assert module.copy_arrays(a[:, 1:], a[:, :3]) is False  # overlap
    row = np.zeros(4, np.uint8)
    assert module.copy_arrays(np.broadcast_to(row, (4, 4)), a) is False  # read-only broadcast
    assert module.copy_arrays(as_strided(row, (4, 4), (0, 1)), a) is False  # aliased dst slots
    assert module.copy_arrays(np.empty(4, object), np.empty(4, object)) is False
    assert module.copy_arrays(b"abcd", a) is False
    assert module.copy_arrays(a, a.copy()) is True


def test_raw_entry_validates_its_arguments() -> None:
    module = _kernels_module()
    a = np.zeros(16, np.uint8)
    addr = a.__array_interface__["data"][0]
    with pytest.raises(ValueError, match="negative"):
        module.copy_strided(addr, (-1,), addr, (1,), (4,), 1)
    with pytest.raises(ValueError, match="length"):
        module.copy_strided(addr, (1, 1), addr, (1,), (4,), 1)
    with pytest.raises(ValueError, match="rank"):
        module.copy_strided(addr, (1,) * 11, addr, (1,) * 11, (1,) * 11, 1)
    with pytest.raises(ValueError, match="itemsize"):
        module.copy_strided(addr, (1,), addr, (1,), (4,), 0)
    with pytest.raises(ValueError, match="NULL"):
        module.copy_strided(0, (1,), addr, (1,), (4,), 1)
    with pytest.raises(TypeError):
        module.copy_strided(addr, (1,), addr, (1,), (4,))
    module.copy_strided(0, (1,), 0, (1,), (0,), 1)  # empty: nothing touched
    with pytest.raises(ValueError, match="unknown"):
        module.set_isa("sse9")


# ------------------------------------------------------------------------ switching off


@pytest.mark.slow
def test_env_var_forces_the_fallback() -> None:
    code = (
        "from npu_hil.harness.codec import fastcopy as f; print(f.KERNEL_AVAILABLE, f.kernel_isa())"
    )
    env = dict(os.environ, NPU_HIL_NO_KERNEL="1")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "None"]


def test_kernel_available_reflects_the_module() -> None:
    importable = importlib.util.find_spec("npu_hil.harness.codec._kernels") is not None
    if fastcopy._kernel_disabled():
        assert not fastcopy.KERNEL_AVAILABLE
    else:
        assert fastcopy.KERNEL_AVAILABLE is importable
        assert (fastcopy.kernel_isa() in ISA_LEVELS) is importable


@st.composite
def ragged_block_cases(draw: st.DrawFn) -> tuple[Layout, Layout, int]:
    """A partial last channel block: ``c`` channels (not a multiple of 16 bytes' units, more
    than 8) in pixels of ``c2`` units, against contiguous planes; ``hw`` pixels, any count."""
    itemsize = draw(st.sampled_from([1, 1, 2, 4, 8]))
    units = 16 // itemsize
    c2 = draw(st.sampled_from([units, 2 * units, units + 3]))
    c = draw(st.integers(min(9, c2), c2).filter(lambda n: n % units or n == c2))
    hw = draw(st.one_of(st.integers(9, 40), st.integers(41, 700)))
    packed = Layout((c, hw), itemsize, (1, 0), ((c2 - c) * itemsize, 0), 0, draw(st.integers(0, 7)))
    planes = Layout((c, hw), itemsize, (0, 1), (0, 0), 0, draw(st.integers(0, 7)))
    if draw(st.booleans()):
        return packed, planes, itemsize
    return planes, packed, itemsize


@pytest.mark.slow
@FIXTURES_OK
@given(case=ragged_block_cases(), seed=st.integers(0, 2**16))
def test_ragged_transpose_blocks_match_copyto(
    kernels: ModuleType, case: tuple[Layout, Layout, int], seed: int
) -> None:
    """The ragged edge blocks of the transpose (a C2 block with 9-15 of 16 channels, both ways):
    the bytes of np.copyto, nothing outside the view written, nothing read past the source."""
    run_case(*case, copy=kernel_copy(kernels), seed=seed)


def test_ragged_block_reads_nothing_past_the_source(kernels: ModuleType) -> None:
    """A 15-row source ending on the last byte of its buffer: the ragged loads stay inside
    (a read past it would be past the array numpy allocated)."""
    rng = np.random.default_rng(5)
    for rows, cols in ((15, 6481), (6481, 15), (9, 33), (33, 9)):
        src = rng.integers(1, 255, size=(rows, cols), dtype=np.uint8)
        out = np.full((cols + 1, rows + 1), 0xA5, np.uint8)
        assert kernels.copy_arrays(out[:cols, :rows], src.T) is True
        assert np.array_equal(out[:cols, :rows], src.T)
        assert (out[cols, :] == 0xA5).all() and (out[:, rows] == 0xA5).all()
        desc = kernels.describe(out[:cols, :rows].strides, src.T.strides, (cols, rows), 1)
        assert desc.startswith("t2d/bt"), desc
