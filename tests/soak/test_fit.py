"""The leak slope's fit: a known slope under bounded noise is recovered within a bound that
follows from the median (more than half of the pairwise slopes lie within it), and outliers
that would drag a least-squares line move the Theil-Sen slope little."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_hil.harness.soak.fit import theil_sen

slopes = st.floats(-1000.0, 1000.0, allow_nan=False)
noise = st.floats(0.01, 50.0)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    slope=slopes,
    intercept=st.floats(-1e5, 1e5),
    n=st.integers(16, 300),
    bound=noise,
    seed=st.integers(0, 2**32 - 1),
)
def test_a_known_slope_is_recovered_under_bounded_noise(
    slope: float, intercept: float, n: int, bound: float, seed: int
) -> None:
    x = np.arange(n, dtype=np.float64)
    rng = np.random.default_rng(seed)
    y = intercept + slope * x + rng.uniform(-bound, bound, n)
    fit = theil_sen(x, y)
    # Pairs at least k apart are more than half of all pairs (k = n // 4); each of their slopes
    # is within 2*bound/k of the true one, so the median is too.
    k = n // 4
    assert abs(fit.slope - slope) <= 2 * bound / k + 1e-9 * abs(slope)
    assert fit.low <= fit.slope <= fit.high
    assert fit.points == n


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    slope=slopes,
    n=st.integers(40, 300),
    bound=noise,
    seed=st.integers(0, 2**32 - 1),
    share=st.floats(0.0, 0.1),
    size=st.floats(1e3, 1e7),
)
def test_outliers_do_not_move_it_much(
    slope: float, n: int, bound: float, seed: int, share: float, size: float
) -> None:
    x = np.arange(n, dtype=np.float64)
    rng = np.random.default_rng(seed)
    y = slope * x + rng.uniform(-bound, bound, n)
    bad = rng.choice(n, size=int(share * n), replace=False)
    y[bad] += size  # a one-off buffer, a spike in RSS
    fit = theil_sen(x, y)
    # Clean pairs at least n // 8 apart are still more than half of all pairs.
    assert abs(fit.slope - slope) <= 2 * bound / (n // 8) + 1e-9 * abs(slope)


def test_least_squares_would_be_dragged_where_theil_sen_is_not() -> None:
    x = np.arange(100, dtype=np.float64)
    y = 5.0 * x
    y[-3:] += 1e6  # three spikes at the end
    assert theil_sen(x, y).slope == pytest.approx(5.0, abs=0.5)
    assert np.polyfit(x, y, 1)[0] > 500  # the straight least-squares line is pulled far off


def test_the_interval_narrows_with_more_points_and_brackets_the_slope() -> None:
    rng = np.random.default_rng(0)
    widths = []
    for n in (20, 200):
        x = np.arange(n, dtype=np.float64)
        fit = theil_sen(x, 2.0 * x + rng.normal(0, 5, n))
        assert fit.low < 2.0 < fit.high
        widths.append(fit.high - fit.low)
    assert widths[1] < widths[0] / 5


def test_too_few_points_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="two different x"):
        theil_sen(np.array([1.0, 1.0]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="x has 2 values, y 3"):
        theil_sen(np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0]))
