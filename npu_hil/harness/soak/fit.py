"""The leak slope: a Theil-Sen line (the median of the pairwise slopes) with Sen's 95 % interval.
A few samples off the line (a garbage collection, an arena returned, a model loading) move it
little, up to about 29 % outliers, where one pulls a least-squares slope. numpy only."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import cast

import numpy as np
from typing_extensions import TypedDict

MAX_POINTS = 800
"""More samples than this are thinned evenly first (the pairs grow as n²)."""
Z_95 = 1.959963984540054


class FitDocument(TypedDict):
    """A fitted slope and its 95 % interval (``Fit.to_dict``)."""

    slope: float
    intercept: float
    low: float
    high: float
    points: int


@dataclass(frozen=True)
class Fit:
    """``slope`` (units of y per unit of x), ``intercept`` (median of y - slope·x), and the 95 %
    confidence interval of the slope (``low``, ``high``) from the ranks of the pairwise slopes
    (Sen 1968); ``points``: how many (x, y) were fitted."""

    slope: float
    intercept: float
    low: float
    high: float
    points: int

    def to_dict(self) -> FitDocument:
        return cast(FitDocument, asdict(self))


def theil_sen(x: np.ndarray, y: np.ndarray) -> Fit:
    """The Theil-Sen fit of ``y`` over ``x`` (ValueError for fewer than two distinct x)."""
    xs = np.asarray(x, dtype=np.float64).reshape(-1)
    ys = np.asarray(y, dtype=np.float64).reshape(-1)
    if xs.shape != ys.shape:
        raise ValueError(f"theil_sen: x has {xs.size} values, y {ys.size}")
    keep = np.isfinite(xs) & np.isfinite(ys)
    xs, ys = xs[keep], ys[keep]
    if xs.size > MAX_POINTS:
        pick = np.linspace(0, xs.size - 1, MAX_POINTS).round().astype(np.int64)
        xs, ys = xs[pick], ys[pick]
    i, j = np.triu_indices(xs.size, k=1)
    dx = xs[j] - xs[i]
    useful = dx != 0
    if not useful.any():
        raise ValueError(f"theil_sen: need two different x values, got {xs.size} points")
    slopes = np.sort((ys[j] - ys[i])[useful] / dx[useful])
    slope = float(np.median(slopes))
    intercept = float(np.median(ys - slope * xs))
    n, pairs = xs.size, slopes.size
    # Sen's interval: the ranks of the pairwise slopes around the median, from the variance of
    # Kendall's S without ties.
    c = Z_95 * math.sqrt(n * (n - 1) * (2 * n + 5) / 18.0)
    lo = max(0, math.floor((pairs - c) / 2.0))
    hi = min(pairs - 1, math.ceil((pairs + c) / 2.0))
    return Fit(slope, intercept, float(slopes[lo]), float(slopes[hi]), int(n))
