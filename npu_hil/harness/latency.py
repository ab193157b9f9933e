"""Latency figures from the durations of N timed runs: nearest-rank percentiles (always a measured
duration, never an interpolation), spread, and ``jitter_ms`` = p99 - p50. Standard library only.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

__all__ = ["Latency", "latency", "percentile"]


def percentile(ordered: Sequence[float], p: float) -> float:
    """Nearest-rank percentile ``p`` (0 < p ≤ 100) of ``ordered`` (sorted, not empty)."""
    if not ordered:
        raise ValueError("percentile of no runs")
    if not 0 < p <= 100:
        raise ValueError(f"percentile {p} is not in (0, 100]")
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Latency:
    """The figures of ``runs`` timed runs, in milliseconds."""

    runs: int
    warmup: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    min_ms: float
    max_ms: float
    mean_ms: float
    stdev_ms: float
    jitter_ms: float
    source: str
    """``agent`` (wall time around the runtime call), ``adapter`` (the runtime's own figure) or
    ``modeled`` (a simulated board's: the target's model of the run, no measurement)."""

    def to_dict(self) -> dict[str, float | int | str]:
        return asdict(self)

    def summary(self) -> str:
        return (
            f"{self.runs} runs ({self.warmup} warm-up, {self.source}): p50 {self.p50_ms:.3f} ms, "
            f"p90 {self.p90_ms:.3f}, p99 {self.p99_ms:.3f}, min {self.min_ms:.3f}, "
            f"max {self.max_ms:.3f}, jitter (p99-p50) {self.jitter_ms:.3f} ms"
        )


def latency(durations_s: Sequence[float], *, warmup: int = 0, source: str = "agent") -> Latency:
    """The figures of ``durations_s`` (seconds, one per timed run, at least one)."""
    if not durations_s:
        raise ValueError("latency of no runs")
    ordered = sorted(float(d) * 1000.0 for d in durations_s)
    p50 = percentile(ordered, 50)
    p99 = percentile(ordered, 99)
    return Latency(
        runs=len(ordered),
        warmup=warmup,
        p50_ms=p50,
        p90_ms=percentile(ordered, 90),
        p99_ms=p99,
        min_ms=ordered[0],
        max_ms=ordered[-1],
        mean_ms=statistics.fmean(ordered),
        stdev_ms=statistics.pstdev(ordered) if len(ordered) > 1 else 0.0,
        jitter_ms=p99 - p50,
        source=source,
    )
