"""Tolerance is per decoded element, in the layout's value units: k passes, k + 1 fails."""

from __future__ import annotations

import numpy as np
import pytest

from npu_hil.harness.codec import get_layout
from npu_hil.harness.diff import diff_buffers


@pytest.mark.parametrize(
    ("target", "name", "dtype", "base", "sign"),
    [
        ("kl730", "1W16C8B", "int8", -100, -1),
        ("kl730", "1W16C8B", "int8", 100, 1),
        ("kl730", "16W1C8B", "uint8", 250, -1),
        ("kl730", "16W1C8B", "uint8", 3, 1),
        ("rk3588", "NC1HWC2", "int8", 0, -1),
        ("rdk-s100", "strided", "int16", -30000, -1),
        ("rdk-s100", "strided", "uint16", 65000, 1),
    ],
)
@pytest.mark.parametrize("k", [1, 2, 5])
def test_k_passes_and_k_plus_one_fails(
    target: str, name: str, dtype: str, base: int, sign: int, k: int
) -> None:
    layout = get_layout(target, name, (1, 20, 3, 5), dtype)
    expected = np.full(layout.shape, base, dtype=dtype)
    at_bound = expected.copy()
    at_bound[0, 7, 1, 2] = base + sign * k
    beyond = expected.copy()
    beyond[0, 7, 1, 2] = base + sign * (k + 1)

    within = diff_buffers(layout, expected, layout.pack(at_bound), tolerance=k)
    assert within.ok
    assert within.verdict == "equal within tolerance"
    assert within.within_tolerance == 1
    assert within.mismatched == 0

    outside = diff_buffers(layout, expected, layout.pack(beyond), tolerance=k)
    assert not outside.ok
    assert outside.mismatched == 1
    assert outside.max_abs_error == k + 1
    assert outside.first_mismatches[0].index == (0, 7, 1, 2)


def test_sixteen_bit_values_are_compared_whole_not_per_byte() -> None:
    """A carry from the low byte into the high byte is one element off by 2, not two bytes."""
    layout = get_layout("kl730", "1W16C8BHL", (1, 16, 1, 1), "int16")
    expected = np.full(layout.shape, 254, dtype=np.int16)
    got = expected.copy()
    got[0, 3] = 256
    report = diff_buffers(layout, expected, layout.pack(got), tolerance=2)
    assert report.ok
    report = diff_buffers(layout, expected, layout.pack(got), tolerance=1)
    assert report.mismatched == 1
    assert report.max_abs_error == 2


def test_float16_tolerance_and_nan() -> None:
    layout = get_layout("rk3588", "NC1HWC2", (1, 8, 2, 2), "float16")
    expected = np.zeros(layout.shape, np.float16)
    expected[0, 0, 0, 0] = np.nan
    got = expected.copy()
    got[0, 1, 0, 0] = 0.25
    assert diff_buffers(layout, expected, layout.pack(got), tolerance=0.25).ok
    assert not diff_buffers(layout, expected, layout.pack(got), tolerance=0.125).ok
    got[0, 0, 0, 0] = 1.0
    report = diff_buffers(layout, expected, layout.pack(got), tolerance=10)
    assert report.mismatched == 1


def test_bad_arguments_are_layout_errors() -> None:
    from npu_hil.harness.errors import LayoutError

    layout = get_layout("kl730", "1W16C8B", (1, 16, 1, 1), "int8")
    good = np.zeros(layout.shape, np.int8)
    with pytest.raises(LayoutError, match="padding must be one of"):
        diff_buffers(layout, good, layout.pack(good), padding="sometimes")
    with pytest.raises(LayoutError, match="tolerance must be >= 0"):
        diff_buffers(layout, good, layout.pack(good), tolerance=-1)
    with pytest.raises(LayoutError, match="packed bytes"):
        diff_buffers(layout, b"\0" * 3, layout.pack(good))
    with pytest.raises(LayoutError, match="dtype"):
        diff_buffers(layout, good.astype(np.int16), layout.pack(good))
    with pytest.raises(LayoutError, match="bytes-like"):
        diff_buffers(layout, good, 12345)
