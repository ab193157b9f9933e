"""The history's data: a case's figures in one run, the runs indexed, a baseline's verdict. On disk
(private, written atomically): each run folder's ``measurements.json`` (``schema``, the
:class:`RunEntryDocument` fields, ``cases``: :class:`CaseDocument`) and the reports root's
``history.json`` (``schema``, ``keep``, ``runs``: the newest ``keep``, oldest first)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import TypedDict

from npu_hil.harness.report.runs import MEASUREMENTS_FILE as MEASUREMENTS_FILE

SCHEMA_VERSION = 1
INDEX_FILE = "history.json"

CaseKey = tuple[str, str]
"""(board, nodeid): the unit a baseline, a trend and a flakiness rate are kept for. A case that
ran on no board has board ``""``."""


LatencyFigures = dict[str, float | int | str]
"""What the history keeps of a case's latency (``npu_hil.harness.latency.Latency.to_dict``'s
p50_ms ... jitter_ms, runs, source)."""


def as_figure(value: Any) -> float | None:
    """A figure as the records keep it, as a number: ``"inf"`` (an exact match) is +infinity;
    anything else that is not a number (a bool, NaN, other text) is no figure."""
    if value == "inf":
        return math.inf
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value):
        return float(value)
    return None


def strict_json(value: Any) -> Any:
    """``value`` with its non-finite floats as the records spell them (``"inf"``, ``"-inf"``,
    ``"nan"``), tuples as lists: JSON without extensions."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    return value


class WorstAccuracy(TypedDict):
    """A case's worst output's figures in measurements.json (``"inf"``: an exact match)."""

    snr_db: float | str | None
    cosine: float | str | None


class CaseDocument(TypedDict):
    """One case of measurements.json's ``cases`` (:meth:`CasePoint.to_dict`)."""

    nodeid: str
    board: str
    target: str
    outcome: str
    ran_on: str
    latency: LatencyFigures | None
    accuracy: WorstAccuracy | None
    noisy: str
    subject: str


class RunEntryDocument(TypedDict):
    """One run of history.json's ``runs`` (:meth:`RunEntry.to_dict`)."""

    run_id: str
    run_key: str
    started: float
    complete: bool
    counts: dict[str, int]
    cases: int


@dataclass(frozen=True)
class CasePoint:
    """One case in one run."""

    run_id: str
    nodeid: str
    board: str
    target: str
    outcome: str
    ran_on: str  # "hw", "sim" or "" (skipped, unreachable)
    latency: LatencyFigures | None = None
    accuracy: WorstAccuracy | None = None
    noisy: str = ""
    subject: str = ""  # the model and inputs the figures are of (TestRecord.subject)

    @property
    def key(self) -> CaseKey:
        return (self.board, self.nodeid)

    def to_dict(self) -> CaseDocument:
        # By hand, not dataclasses.asdict: its deep copy of every figure was two thirds of the
        # time writing a 1,000-case run's measurements (the run's file says run_id once).
        return {
            "nodeid": self.nodeid,
            "board": self.board,
            "target": self.target,
            "outcome": self.outcome,
            "ran_on": self.ran_on,
            "latency": dict(self.latency) if self.latency is not None else None,
            "accuracy": self.accuracy.copy() if self.accuracy is not None else None,
            "noisy": self.noisy,
            "subject": self.subject,
        }


@dataclass(frozen=True)
class RunEntry:
    """One run in the index."""

    run_id: str
    run_key: str
    started: float
    complete: bool
    counts: dict[str, int] = field(default_factory=dict)
    cases: int = 0

    def to_dict(self) -> RunEntryDocument:
        # by hand: asdict's deep copy made rewriting a 1,000-run index take 0.2 s
        return {
            "run_id": self.run_id,
            "run_key": self.run_key,
            "started": self.started,
            "complete": self.complete,
            "counts": dict(self.counts),
            "cases": self.cases,
        }


@dataclass(frozen=True)
class Band:
    """A baseline: the median of a figure over earlier runs and the band a new value may fall in
    (``median ± max(k · 1.4826 · MAD, floor)``), with the runs it was built from."""

    metric: str
    median: float
    low: float
    high: float
    mad: float
    k: float
    runs: tuple[str, ...]  # run ids, oldest first

    def text(self) -> str:
        return (
            f"baseline {self.median:.4g} (band {self.low:.4g}..{self.high:.4g}, "
            f"k={self.k:g}, MAD {self.mad:.3g}, from {len(self.runs)} run"
            f"{'s' if len(self.runs) != 1 else ''}: {', '.join(self.runs)})"
        )


@dataclass(frozen=True)
class Regression:
    """A figure outside its baseline's band.

    ``severity``: ``failure`` (a perf test's latency), ``warning`` (any other case), or
    ``noisy`` (the board's state moved during the runs: reported, never failing)."""

    board: str
    nodeid: str
    metric: str  # "p50_ms", "p99_ms", "snr_db", "cosine" ...
    value: float
    band: Band
    severity: str
    message: str
