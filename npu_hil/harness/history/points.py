"""A run's records as the history keeps them: one :class:`~npu_hil.harness.history.model.CasePoint`
per case (its latency figures, its worst output's accuracy, whether the board was steady) and one
:class:`~npu_hil.harness.history.model.RunEntry` for the run."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from npu_hil.harness.history.model import CasePoint, RunEntry, WorstAccuracy, as_figure
from npu_hil.harness.report.perf import CLOCKS
from npu_hil.harness.report.records import OUTCOMES, TestRecord

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
