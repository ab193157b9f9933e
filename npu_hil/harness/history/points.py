"""A run's records as the history keeps them: one :class:`~npu_hil.harness.history.model.CasePoint`
per case (its latency figures, its worst output's accuracy, whether the board was steady) and one
:class:`~npu_hil.harness.history.model.RunEntry` for the run."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from npu_hil.harness.history.model import CasePoint, RunEntry, WorstAccuracy
from npu_hil.harness.history.noise import noise_reason
from npu_hil.harness.report.records import OUTCOMES, TestRecord, last_attempts

__all__ = [
    "LATENCY_FIELDS",
    "case_point",
    "run_entry",
    "run_points",
    "subject_after",
    "worst_accuracy",
]

# What the history keeps of a Latency (the rest is in the run's records).
LATENCY_FIELDS = ("p50_ms", "p90_ms", "p99_ms", "min_ms", "max_ms", "jitter_ms", "runs", "source")
INF = "inf"


def _as_float(value: Any) -> float | None:
    """A figure as a number: ``"inf"`` (an exact match) is +infinity, anything else that is not
    a finite or infinite number is no figure."""
    if value == INF:
        return math.inf
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value):
        return float(value)
    return None


def _kept(value: float) -> float | str:
    return INF if value == math.inf else value


def worst_accuracy(record: TestRecord) -> WorstAccuracy | None:
    """The lowest SNR and the lowest cosine over the record's outputs (each may come from a
    different output), ``"inf"`` kept as ``"inf"``; None when no output has figures."""
    snrs: list[float] = []
    cosines: list[float] = []
    seen = False
    for tensor in record.tensors:
        if not tensor.accuracy:
            continue
        seen = True
        snr = _as_float(tensor.accuracy.get("snr_db"))
        cosine = _as_float(tensor.accuracy.get("cosine"))
        if snr is not None:
            snrs.append(snr)
        if cosine is not None:
            cosines.append(cosine)
    if not seen:
        return None
    return {
        "snr_db": _kept(min(snrs)) if snrs else None,
        "cosine": _kept(min(cosines)) if cosines else None,
    }


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


def run_points(records: Sequence[TestRecord], run_id: str) -> list[CasePoint]:
    """One point per case, the last record of a nodeid winning (a rerun replaces its earlier
    attempt, as in the run's report)."""
    return [case_point(r, run_id) for r in last_attempts(records)]


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
