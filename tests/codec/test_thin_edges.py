"""Blocked transposes with a thin ragged edge (C = 17: one channel past the last 16-byte block,
up to 4 bytes): the edge goes by the scalar loop instead of a whole ragged 16x16 block. The
bytes are np.copyto's, both ways, at every instruction-set level, nothing outside the view
written."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ISA_LEVELS = ("base", "avx2", "avx512")
UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@pytest.fixture(params=ISA_LEVELS)
def kernels(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    module: ModuleType = pytest.importorskip("npu_hil.harness.codec._kernels")
    got = module.set_isa(request.param)
    try:
        if got != request.param:
            pytest.skip(f"this CPU runs no {request.param} kernels (best: {got})")
        yield module
    finally:
        module.set_isa(None)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    itemsize=st.sampled_from((1, 1, 2, 4, 8)),
    blocks=st.integers(1, 3),
    extra=st.integers(1, 5),
    pixels=st.one_of(st.integers(17, 40), st.integers(41, 400)),
    pack=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_thin_edges_match_copyto(
    kernels: ModuleType, itemsize: int, blocks: int, extra: int, pixels: int, pack: bool, seed: int
) -> None:
    units = 16 // itemsize
    channels = (blocks + 8 // units) * units + extra  # more than 8: a transpose, not a zip
    rng = np.random.default_rng(seed)
    dtype = UNSIGNED[itemsize]
    planes = rng.integers(1, 1 << 8 * itemsize - 1, (channels, pixels), dtype=np.uint64)
    planes = planes.astype(dtype)
    # NHWC-like pixels of `channels` units and a 1-unit gap, against planes with a gap column
    packed = np.zeros((pixels, channels + 1), dtype)
    unpacked = np.zeros((channels, pixels + 1), dtype)
    if pack:
        whole, dst, src = packed, packed[:, :channels], planes.T
    else:
        packed[:, :channels] = planes.T
        whole, dst, src = unpacked, unpacked[:, :pixels], packed[:, :channels].T
    assert kernels.copy_arrays(dst, src) is True
    desc = kernels.describe(dst.strides, src.strides, dst.shape, itemsize)
    assert desc.startswith("t2d/bt"), desc
    assert np.array_equal(dst, src)
    assert np.count_nonzero(whole) == dst.size  # the gap untouched
