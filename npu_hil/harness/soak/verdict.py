"""The soak's verdict: a bounded leak slope per agent and memory pool, a bounded error rate per
board (the rules and defaults: docs/farm/health.md, "Soak"). One agent process counts per context,
the one with the most samples (a restarted agent starts again from a small RSS). The growth floor
keeps RSS noise and a steep but tiny climb (an allocator filling its last arena: tens of KiB)
from failing a soak; too few samples after the warm-up cannot be judged, and fail as such."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np
from typing_extensions import TypedDict

from npu_hil.harness.soak.fit import Fit, FitDocument, theil_sen
from npu_hil.harness.soak.loop import BoardSoak, SoakRun
from npu_hil.harness.soak.samples import MemorySample

DEFAULT_LEAK_KIB_PER_1K = 4096.0
"""The leak bound when none is given: 4 MiB per 1000 jobs of one agent (a clean simulated
agent grows about 1.3 KiB per job over its first few hundred jobs: Python's allocator)."""
DEFAULT_ERROR_RATE = 0.01
METRICS = ("rss_kib", "cma_used_kib", "dmabuf_kib")


class BoundsDocument(TypedDict):
    """The verdict's ``bounds`` (``Bounds.to_dict``)."""

    max_leak_kib_per_1k: float | None
    max_leak_kib_per_hour: float | None
    max_error_rate: float
    warmup_share: float
    min_samples: int
    floor_kib: float


@dataclass(frozen=True)
class Bounds:
    """The limits a soak is held to (None: that slope is reported, not judged)."""

    max_leak_kib_per_1k: float | None = DEFAULT_LEAK_KIB_PER_1K
    max_leak_kib_per_hour: float | None = None
    max_error_rate: float = DEFAULT_ERROR_RATE
    warmup_share: float = 0.2
    min_samples: int = 4
    floor_kib: float = 1024.0

    def __post_init__(self) -> None:
        for name in ("max_leak_kib_per_1k", "max_leak_kib_per_hour"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")
        if not 0 <= self.max_error_rate <= 1:
            raise ValueError(f"max_error_rate must be in [0, 1], got {self.max_error_rate!r}")
        if not 0 <= self.warmup_share < 1:
            raise ValueError(f"warmup_share must be in [0, 1), got {self.warmup_share!r}")
        if not (math.isfinite(self.floor_kib) and self.floor_kib >= 0):
            raise ValueError(f"floor_kib must be a number >= 0, got {self.floor_kib!r}")
        if self.min_samples < 3:
            raise ValueError(f"min_samples must be 3 or more, got {self.min_samples!r}")

    def to_dict(self) -> BoundsDocument:
        return cast(BoundsDocument, {k: getattr(self, k) for k in self.__dataclass_fields__})


class SeriesDocument(TypedDict):
    """A memory series in the verdict's ``series`` (``SeriesFit.to_dict``)."""

    board: str
    context: int | None
    metric: str
    pid: int | None
    samples: int
    warmup_dropped: int
    kib_per_1k_jobs: FitDocument | None
    kib_per_hour: FitDocument | None
    problem: str | None
    failed: list[str]


@dataclass
class SeriesFit:
    """One memory series: whose (``board``, ``context``; None for a board-wide pool), which
    ``metric``, the samples fitted, and the slopes per 1000 jobs and per hour (with their 95 %
    intervals), or ``problem`` when it could not be fitted."""

    board: str
    context: int | None
    metric: str
    samples: int
    warmup_dropped: int
    pid: int | None = None
    per_1k: Fit | None = None
    per_hour: Fit | None = None  # also the plot's line over time, in the metric's units
    problem: str | None = None
    failed: list[str] = field(default_factory=list)

    def to_dict(self) -> SeriesDocument:
        return {
            "board": self.board,
            "context": self.context,
            "metric": self.metric,
            "pid": self.pid,
            "samples": self.samples,
            "warmup_dropped": self.warmup_dropped,
            "kib_per_1k_jobs": self.per_1k.to_dict() if self.per_1k else None,
            "kib_per_hour": self.per_hour.to_dict() if self.per_hour else None,
            "problem": self.problem,
            "failed": list(self.failed),
        }


class ErrorRate(TypedDict):
    """A board's entry in the verdict's ``error_rates``."""

    jobs: int
    errors: int
    rate: float
    by_kind: dict[str, int]


class VerdictDocument(TypedDict):
    """soak.json's ``verdict`` (``Verdict.to_dict``)."""

    passed: bool
    reasons: list[str]
    bounds: BoundsDocument
    error_rates: dict[str, ErrorRate]
    series: list[SeriesDocument]


@dataclass
class Verdict:
    passed: bool
    reasons: list[str]
    series: list[SeriesFit]
    error_rates: dict[str, ErrorRate]
    bounds: Bounds

    def to_dict(self) -> VerdictDocument:
        return {
            "passed": self.passed,
            "reasons": list(self.reasons),
            "bounds": self.bounds.to_dict(),
            "error_rates": self.error_rates,
            "series": [s.to_dict() for s in self.series],
        }


def sample_value(sample: MemorySample, metric: str) -> float | None:
    """The sample's figure of ``metric`` (one of :data:`METRICS`) in KiB, None without it."""
    if metric == "rss_kib":
        return None if sample.rss_kib is None else float(sample.rss_kib)
    if metric == "cma_used_kib":
        if sample.cma_total_kib is None or sample.cma_free_kib is None:
            return None
        return float(sample.cma_total_kib - sample.cma_free_kib)
    return None if sample.dmabuf_bytes is None else sample.dmabuf_bytes / 1024.0


def _series(part: BoardSoak) -> list[tuple[int | None, str, list[MemorySample]]]:
    found: list[tuple[int | None, str, list[MemorySample]]] = [
        (c.context, "rss_kib", [s for s in part.samples if s.context == c.context])
        for c in part.contexts
    ]
    first = [s for s in part.samples if s.context == 0]
    return found + [
        (None, metric, first)
        for metric in METRICS[1:]
        if any(sample_value(s, metric) is not None for s in first)
    ]


def _fit_series(
    board: str, context: int | None, metric: str, samples: Sequence[MemorySample], bounds: Bounds
) -> SeriesFit:
    pids = [s.pid for s in samples]
    pid = max(set(pids), key=pids.count) if pids else None
    if context is not None:  # an agent's own RSS: one process only
        samples = [s for s in samples if s.pid == pid]
    points = [(s, v) for s in samples if (v := sample_value(s, metric)) is not None]
    drop = math.ceil(bounds.warmup_share * len(points))
    kept = points[drop:]
    result = SeriesFit(board, context, metric, len(kept), drop, pid)
    if len(kept) < bounds.min_samples:
        result.problem = (
            f"{len(kept)} samples after the warm-up ({drop} dropped), need {bounds.min_samples}: "
            "run longer or sample more often (--sample-every)"
        )
        return result
    jobs = np.array([s.jobs for s, _ in kept], dtype=np.float64)
    hours = np.array([s.t_s for s, _ in kept], dtype=np.float64) / 3600.0
    values = np.array([v for _, v in kept], dtype=np.float64)
    try:
        per_job = theil_sen(jobs, values)
        result.per_1k = replace(
            per_job, slope=per_job.slope * 1000, low=per_job.low * 1000, high=per_job.high * 1000
        )
    except ValueError as exc:
        result.problem = f"no slope over jobs: {exc}"
    try:
        result.per_hour = theil_sen(hours, values)
    except ValueError as exc:
        result.problem = f"no slope over time: {exc}"
    for fit, bound, unit, span in (
        (result.per_1k, bounds.max_leak_kib_per_1k, "KiB per 1000 jobs", np.ptp(jobs) / 1000),
        (result.per_hour, bounds.max_leak_kib_per_hour, "KiB per hour", np.ptp(hours)),
    ):
        if fit is None or bound is None:
            continue
        growth = fit.slope * float(span)
        if fit.slope > bound and fit.low > 0 and growth > bounds.floor_kib:
            result.failed.append(
                f"{fit.slope:.1f} {unit} (95 % interval {fit.low:.1f} .. {fit.high:.1f}; "
                f"{growth:.0f} KiB over the fitted span) > {bound:g}"
            )
    return result


def _who(series: SeriesFit) -> str:
    if series.context is None:
        return f"{series.board} {series.metric}"
    return f"{series.board} context {series.context} agent {series.metric}"


def judge(run: SoakRun, bounds: Bounds | None = None) -> Verdict:
    """The verdict on ``run`` under ``bounds`` (defaults: :class:`Bounds`)."""
    limits = bounds if bounds is not None else Bounds()
    reasons: list[str] = []
    series: list[SeriesFit] = []
    rates: dict[str, ErrorRate] = {}
    for part in run.boards:
        if part.problem is not None:
            reasons.append(f"{part.board}: did not run: {part.problem}")
            continue
        for context, metric, samples in _series(part):
            fitted = _fit_series(part.board, context, metric, samples, limits)
            series.append(fitted)
            if fitted.problem is not None and metric == "rss_kib" and not fitted.failed:
                reasons.append(f"{_who(fitted)}: leak slope not measured: {fitted.problem}")
            for text in fitted.failed:
                reasons.append(f"{_who(fitted)}: leak slope {text}")
        rate = part.errors / part.jobs if part.jobs else 0.0
        by_kind: Counter[str] = Counter()
        for counts in part.contexts:
            by_kind.update(counts.by_kind)
        rates[part.board] = {
            "jobs": part.jobs,
            "errors": part.errors,
            "rate": rate,
            "by_kind": dict(by_kind),
        }
        if part.jobs == 0:
            reasons.append(f"{part.board}: no job ran")
        elif rate > limits.max_error_rate:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(by_kind.items()))
            reasons.append(
                f"{part.board}: error rate {rate:.4f} ({part.errors} of {part.jobs} jobs failed: "
                f"{kinds}) > max {limits.max_error_rate:g}"
            )
        for counts in part.contexts:
            if counts.stopped:
                reasons.append(f"{part.board} context {counts.context} stopped: {counts.stopped}")
    if run.interrupted:
        reasons.append("interrupted before the end of the plan")
    return Verdict(not reasons, reasons, series, rates, limits)
