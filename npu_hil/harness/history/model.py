"""The history's data: a case's figures in one run, the runs indexed, a baseline's verdict. On disk
(private, written atomically): each run folder's ``measurements.json`` (``schema``, the
:class:`RunEntryDocument` fields, ``cases``: :class:`CaseDocument`) and the reports root's
``history.json`` (``schema``, ``keep``, ``runs``: the newest ``keep``, oldest first). A run's
records become one :class:`CasePoint` per case (its latency figures, its worst output's accuracy,
whether the board was steady) and one :class:`RunEntry` for the run."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import TypedDict

from npu_hil.harness.report.perf import CLOCKS
from npu_hil.harness.report.records import OUTCOMES, TestRecord
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


# What the history keeps of a Latency (the rest is in the run's records).
LATENCY_FIELDS = ("p50_ms", "p90_ms", "p99_ms", "min_ms", "max_ms", "jitter_ms", "runs", "source")


def _kept(value: float) -> float | str:
    return "inf" if value == math.inf else value


def worst_accuracy(record: TestRecord) -> WorstAccuracy | None:
    """The lowest SNR and the lowest cosine over the record's outputs (each may come from a
    different output), ``"inf"`` kept as ``"inf"``; None when no output has figures."""
    found = [t.accuracy for t in record.tensors if t.accuracy]
    if not found:
        return None
    snrs = [v for f in found if (v := as_figure(f.get("snr_db"))) is not None]
    cosines = [v for f in found if (v := as_figure(f.get("cosine"))) is not None]
    return {
        "snr_db": _kept(min(snrs)) if snrs else None,
        "cosine": _kept(min(cosines)) if cosines else None,
    }


# Was the board steady while the case was timed? A figure taken while a thermal zone moved by
# THERMAL_STEP_MC or more, or a cpufreq policy's or the NPU's or DDR's devfreq frequency or
# governor changed, says more about the board than about the runtime: a baseline reports it as
# noisy instead of failing it. A reading absent on either side is no evidence of a change.
THERMAL_STEP_MC = 5000  # millidegrees C


def _by(entries: Any, key: str) -> dict[str, Mapping[str, Any]]:
    if not isinstance(entries, list):
        return {}
    return {str(e[key]): e for e in entries if isinstance(e, Mapping) and e.get(key) is not None}


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _thermal(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    reasons = []
    was, now = _by(before.get("thermal"), "zone"), _by(after.get("thermal"), "zone")
    for zone in sorted(set(was) & set(now)):
        t0, t1 = _number(was[zone].get("temp_mc")), _number(now[zone].get("temp_mc"))
        if t0 is None or t1 is None or abs(t1 - t0) < THERMAL_STEP_MC:
            continue
        verb = "rose" if t1 > t0 else "fell"
        reasons.append(f"{zone} {verb} {abs(t1 - t0) / 1000:.1f} °C during the runs")
    return reasons


def _clocks(
    before: Mapping[str, Any], after: Mapping[str, Any], kind: str, key: str, freq: str
) -> list[str]:
    reasons = []
    label = "cpufreq" if kind == "cpu" else f"{kind} devfreq"
    unit = "kHz" if freq.endswith("khz") else "Hz"
    was, now = _by(before.get(kind), key), _by(after.get(kind), key)
    for name in sorted(set(was) & set(now)):
        g0, g1 = was[name].get("governor"), now[name].get("governor")
        if g0 is not None and g1 is not None and g0 != g1:
            reasons.append(f"{label} {name} governor {g0} -> {g1}")
        f0, f1 = _number(was[name].get(freq)), _number(now[name].get(freq))
        if f0 is not None and f1 is not None and f0 != f1:
            reasons.append(f"{label} {name} {f0} -> {f1} {unit}")
    return reasons


def noise_reason(board_state: Mapping[str, Any] | None) -> str:
    """Why the board's state moved during the timed runs, ``""`` when it did not (or when there
    are not two readings to compare), e.g. ``thermal_zone0 rose 7.0 °C during the runs;
    cpufreq policy0 1800000 -> 1416000 kHz``."""
    if not isinstance(board_state, Mapping):
        return ""
    before, after = board_state.get("before"), board_state.get("after")
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return ""
    reasons = _thermal(before, after)
    for kind, key, freq in CLOCKS:
        reasons += _clocks(before, after, kind, key, freq)
    return "; ".join(reasons)


def subject_after(previous: str, artifact_hashes: Mapping[str, str], input_digest: str) -> str:
    """A test's subject after one more model run: ``previous`` (the runs before it, "" for the
    first) with the run's artifacts (by content, not by path: a model rebuilt to the same bytes
    is the same model) and inputs, in 32 hex digits."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(previous.encode())
    for content in sorted(artifact_hashes.values()):
        digest.update(b"\0" + content.encode())
    digest.update(b"\0" + input_digest.encode())
    return digest.hexdigest()


def case_point(record: TestRecord, run_id: str) -> CasePoint:
    """The record's point in run ``run_id``."""
    latency = (
        {k: record.latency[k] for k in LATENCY_FIELDS if k in record.latency}
        if record.latency
        else None
    )
    return CasePoint(
        run_id=run_id,
        nodeid=record.nodeid,
        board=record.board or "",
        target=record.target or "",
        outcome=record.outcome,
        ran_on=record.provenance,
        latency=latency,
        accuracy=worst_accuracy(record),
        noisy=noise_reason(record.board_state),
        subject=record.subject,
    )


def run_entry(meta: Mapping[str, Any], points: Sequence[CasePoint], started: float) -> RunEntry:
    """The run's index entry from its meta (``run_id``, ``run_key``, ``complete``: what
    :func:`npu_hil.harness.report.runmeta.run_meta` says at the end of the session) and its
    points."""
    counts = Counter(p.outcome for p in points)
    return RunEntry(
        run_id=str(meta["run_id"]),
        run_key=str(meta.get("run_key", "")),
        started=float(started),
        complete=bool(meta.get("complete", False)),
        counts={o: counts.get(o, 0) for o in OUTCOMES},
        cases=len(points),
    )
