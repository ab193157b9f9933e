"""Baselines and regressions: a case's figure against the same figure in its earlier runs (rules,
flags, messages: docs/model-developer/figures.md, "Baselines and regressions"). The band is
``median ± max(k · 1.4826 · MAD, floor)``: a single wild run does not move the MAD, and the floor
keeps a band of identical values from being zero wide."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import cast

from npu_hil.harness.history.model import Band, CasePoint, Regression, as_figure, strict_json
from npu_hil.harness.report.records import FindingDocument

MAD_SCALE = 1.4826  # MAD → standard deviation, for normally spread figures
P99_MIN_RUNS = 10
LATENCY_METRICS = ("p50_ms", "p99_ms")
ACCURACY_METRICS = ("snr_db", "cosine")
BOARD_RAN = ("hw", "sim")


@dataclass(frozen=True)
class Settings:
    """How bands are made: ``k`` MADs wide, from the last ``runs`` runs, no narrower than the
    floors (latency: ``latency_floor_percent`` of the median but at least ``latency_floor_ms``)."""

    k: float = 3.0
    runs: int = 10
    latency_floor_percent: float = 10.0
    latency_floor_ms: float = 0.005
    snr_floor_db: float = 1.0
    cosine_floor: float = 1e-4

    def __post_init__(self) -> None:
        if not (math.isfinite(self.k) and self.k >= 0):
            raise ValueError(f"baseline k must be a finite number >= 0, got {self.k}")
        if self.runs < 1:
            raise ValueError(f"baseline runs must be at least 1, got {self.runs}")
        if not (math.isfinite(self.latency_floor_percent) and self.latency_floor_percent >= 0):
            raise ValueError(
                f"baseline floor must be a percentage >= 0, got {self.latency_floor_percent}"
            )

    def floor(self, metric: str, median: float) -> float:
        if metric in LATENCY_METRICS:
            return max(self.latency_floor_percent / 100.0 * abs(median), self.latency_floor_ms)
        return self.snr_floor_db if metric == "snr_db" else self.cosine_floor


def metric_value(point: CasePoint, metric: str) -> float | None:
    """The point's figure for ``metric`` (``"inf"`` as +infinity), None when it has none (or,
    for ``p99_ms``, fewer than ``P99_MIN_RUNS`` runs)."""
    if metric in LATENCY_METRICS:
        if not point.latency:
            return None
        if metric == "p99_ms":
            runs = point.latency.get("runs")
            if not isinstance(runs, int) or runs < P99_MIN_RUNS:
                return None
        return as_figure(point.latency.get(metric))
    if metric in ACCURACY_METRICS:
        return as_figure(point.accuracy.get(metric)) if point.accuracy else None
    raise ValueError(
        f"unknown baseline metric {metric!r}; known: {LATENCY_METRICS + ACCURACY_METRICS}"
    )


def counts(point: CasePoint) -> bool:
    """Whether an earlier point may be part of a baseline: it passed and ran on a board."""
    return point.outcome == "passed" and point.ran_on in BOARD_RAN


def same_subject(point: CasePoint, earlier: Sequence[CasePoint]) -> list[CasePoint]:
    """The earlier points of what ``point`` ran: its model and inputs."""
    return [p for p in earlier if p.subject == point.subject]


def new_baseline_note(point: CasePoint, earlier: Sequence[CasePoint]) -> str:
    """Why ``point`` starts a new baseline: the last earlier point that could have been its
    baseline ran another model or other inputs (or did not record which). "" when it did not,
    or when there is none."""
    last = next((p for p in reversed(earlier) if counts(p)), None)
    if last is None or last.subject == point.subject:
        return ""
    if not last.subject:
        why = f"run {last.run_id} did not record its model and inputs"
    else:
        why = (
            f"its model or inputs changed since run {last.run_id} "
            f"({last.subject[:12]} then, {point.subject[:12] or 'none'} now)"
        )
    return f"new baseline: {why}; earlier figures are not compared"


def band_for(metric: str, earlier: Sequence[CasePoint], settings: Settings) -> Band | None:
    """The band of ``metric`` over the earlier points (oldest first; the last ``settings.runs``
    that count and have the figure), None when none has it."""
    chosen = [
        (p.run_id, v) for p in earlier if counts(p) and (v := metric_value(p, metric)) is not None
    ][-settings.runs :]
    if not chosen:
        return None
    values = [v for _, v in chosen]
    median = statistics.median(values)
    if math.isinf(median):
        # An exact match most runs: any finite figure is below it; the band is the one point.
        mad, low, high = 0.0, median, median
    else:
        mad = statistics.median(abs(v - median) for v in values)
        half = max(settings.k * MAD_SCALE * mad, settings.floor(metric, median))
        low, high = median - half, median + half
    return Band(
        metric=metric,
        median=median,
        low=low,
        high=high,
        mad=mad,
        k=settings.k,
        runs=tuple(run for run, _ in chosen),
    )


def _value_text(metric: str, value: float) -> str:
    if metric in LATENCY_METRICS:
        return f"{value:.3f} ms"
    if metric == "snr_db":
        return f"{value:.1f} dB"
    return f"{value:.6f}"


def evaluate(
    point: CasePoint,
    earlier_points: Sequence[CasePoint],
    *,
    perf: bool,
    accuracy_thresholds: bool,
    settings: Settings,
) -> list[Regression]:
    """Every metric of ``point`` outside its band over ``earlier_points`` (the case's points in
    earlier runs, oldest first), with its severity and message."""
    found = []
    earlier_points = same_subject(point, earlier_points)
    for metric in LATENCY_METRICS + ACCURACY_METRICS:
        value = metric_value(point, metric)
        if value is None:
            continue
        band = band_for(metric, earlier_points, settings)
        if band is None:
            continue
        latency = metric in LATENCY_METRICS
        # latency regresses upwards; accuracy downwards (an exact match never regresses)
        regressed = value > band.high if latency else not math.isinf(value) and value < band.low
        if not regressed:
            continue
        side = "above" if latency else "below"
        if latency and point.noisy:
            severity = "noisy"
        elif (latency and perf) or (not latency and accuracy_thresholds):
            severity = "failure"
        else:
            severity = "warning"
        message = (
            f"{point.board or '(no board)'} {point.nodeid}: {metric} "
            f"{_value_text(metric, value)} {side} its {band.text()}"
        )
        if severity == "noisy":
            message += f"; noisy, not failing: {point.noisy}"
        found.append(Regression(point.board, point.nodeid, metric, value, band, severity, message))
    return found


def finding_dict(regression: Regression) -> FindingDocument:
    """``regression`` as strict JSON has it (an infinite median is ``"inf"``, runs a list)."""
    return cast(FindingDocument, strict_json(asdict(regression)))
