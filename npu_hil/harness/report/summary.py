"""summary.json: counts per outcome, board and target, where cases ran, board health, latency and
accuracy per target, baseline findings. The records stay in records.jsonl and each case's figures
in measurements.json: at 12,000 cases the records embedded made summary.json 71 MB, parsed whole
by every reader, and a row per case in ``latency`` and ``accuracy`` kept 10 MB."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from statistics import median
from typing import TYPE_CHECKING, Any

from typing_extensions import NotRequired, TypedDict

from npu_hil.harness.report.boardlog import BoardLogs, board_log_summary
from npu_hil.harness.report.records import NO_BOARD, OUTCOMES, FindingDocument, TestRecord
from npu_hil.harness.report.runmeta import RunMeta
from npu_hil.harness.report.runs import MEASUREMENTS_FILE, RECORDS_FILE
from npu_hil.harness.report.stability import Quarantine, Unstable, stability_summary

if TYPE_CHECKING:
    from npu_hil.harness.farm.health_store import HealthDocument

SCHEMA_VERSION = 4
"""4: ``latency`` and ``accuracy`` per target (each case's figures stay in its record and in
``measurements_file``); 3: no ``records`` (``records_file`` names where they are), a row per case
in ``latency`` and ``accuracy``; 2 embedded every record."""
NO_TARGET = "(no target)"
_KIND = {"hw": "hardware", "sim": "simulated", "": "not run"}


class HealthCount(TypedDict):
    """A board's health event in summary.json's ``board_health``, with how many cases met it."""

    event: str
    cases: int


class TargetLatency(TypedDict):
    """A target's entry in summary.json's ``latency`` (``"inf"`` or None where no figure is
    finite)."""

    cases: int
    p50_ms_median: float | str | None
    p99_ms_max: float | str | None


class TargetAccuracy(TypedDict):
    """A target's entry in summary.json's ``accuracy``."""

    outputs: int
    breached: int
    snr_db_min: float | str | None
    cosine_min: float | str | None


class RunHistory(TypedDict):
    """summary.json's ``history``: the earlier runs the baselines came from, and how many runs
    the index holds (None: the index could not be updated)."""

    baseline_runs: list[str]
    indexed_runs: int | None


class SummaryDocument(TypedDict):
    """summary.json, as :func:`build_summary` writes it (``comparison``: the writer's counts of
    comparison.json's lists)."""

    schema: int
    meta: RunMeta
    run_failure: str | None
    run_warnings: list[str]
    total: int
    outcomes: dict[str, int]
    simulated: int
    hardware: int
    not_run: int
    no_board: int
    by_backend: dict[str, dict[str, int]]
    # per board: its target, backend, where its cases ran (ran_hw, ran_sim, kind), runtime
    # versions, and a count per outcome
    per_board: dict[str, dict[str, Any]]
    per_target: dict[str, dict[str, int]]
    board_health: dict[str, list[HealthCount]]
    health_history: dict[str, HealthDocument]
    latency: dict[str, TargetLatency]
    accuracy: dict[str, TargetAccuracy]
    regressions: list[FindingDocument]
    unstable: Unstable
    quarantine: Quarantine
    board_logs: BoardLogs
    history: RunHistory | None
    records_file: str
    measurements_file: str
    comparison: NotRequired[dict[str, int | str | None]]


def _zero() -> dict[str, int]:
    return dict.fromkeys(OUTCOMES, 0)


def board_kind(entry: Mapping[str, Any]) -> str:
    """``HW``, ``SIM``, ``HW+SIM`` (some cases fell back) or ``-`` (nothing ran on it)."""
    hw, sim = entry.get("ran_hw", 0), entry.get("ran_sim", 0)
    if hw and sim:
        return "HW+SIM"
    return "HW" if hw else "SIM" if sim else "-"


def _health(records: Sequence[TestRecord]) -> dict[str, list[HealthCount]]:
    """Per board: each distinct health event (fallback, unreachable, power cycle, retries) with
    how many cases met it."""
    per_board: dict[str, dict[str, int]] = {}
    for record in records:
        events = list(record.board_events)
        reason = record.properties.get("fallback_reason")
        if reason and not any(reason in e for e in events):
            events.append(f"fell back to a simulated board: {reason}")
        retries = record.properties.get("retries")
        if retries and not record.retried:  # a record written before ``retried`` existed
            events.append("model run retried after a transport error or timeout")
        events.extend(f"model run retried after {error}" for error in record.retried)
        for event in dict.fromkeys(events):
            board = per_board.setdefault(record.board or NO_BOARD, {})
            board[event] = board.get(event, 0) + 1
    return {
        board: [{"event": e, "cases": n} for e, n in events.items()]
        for board, events in sorted(per_board.items())
    }


def nothing_reached(records: Sequence[TestRecord]) -> str | None:
    """Why a run of board cases is a failed run although nothing failed: not one case ran on a
    board (all skipped for want of a matching board, or their boards unreachable). None when
    some case ran on a board, or when there were no board cases at all."""
    if not records or any(r.provenance in ("hw", "sim") for r in records):
        return None
    counts = Counter(r.outcome for r in records)
    outcomes = ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o])
    reasons = Counter(r.message for r in records if r.message)
    top = "; ".join(
        f"{message} ({n} case{'s' if n > 1 else ''})" for message, n in reasons.most_common(3)
    )
    more = f"; and {len(reasons) - 3} other reasons" if len(reasons) > 3 else ""
    return (
        f"no test reached a board: {len(records)} board cases ({outcomes}), none ran on a board"
        + (f": {top}{more}" if top else "")
    )


def _worst(values: list[float], pick: Callable[[list[float]], float]) -> float | str | None:
    """``pick`` of the finite figures (an exact match's SNR is infinite, written ``"inf"``)."""
    finite = [v for v in values if math.isfinite(v)]
    if finite:
        return pick(finite)
    return "inf" if values else None


def _figures(values: Any) -> list[float]:
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _latency_by_target(records: Sequence[TestRecord]) -> dict[str, TargetLatency]:
    """Per target, the cases that measured latency: how many, the median of their p50 and the
    worst p99. Each case's figures are in its record and in the run's measurements file."""
    measured: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        if record.latency:
            measured.setdefault(record.target or NO_TARGET, []).append(record.latency)
    return {
        target: {
            "cases": len(latencies),
            "p50_ms_median": _worst(_figures(x.get("p50_ms") for x in latencies), median),
            "p99_ms_max": _worst(_figures(x.get("p99_ms") for x in latencies), max),
        }
        for target, latencies in sorted(measured.items())
    }


def _accuracy_by_target(records: Sequence[TestRecord]) -> dict[str, TargetAccuracy]:
    """Per target, the outputs compared with the float reference: how many, how many failed a
    threshold, and the lowest SNR and cosine among them."""
    measured: dict[str, list[dict[str, Any]]] = {}
    breached: Counter[str] = Counter()
    for record in records:
        for tensor in record.tensors:
            if tensor.accuracy is not None:
                measured.setdefault(record.target or NO_TARGET, []).append(tensor.accuracy)
                breached[record.target or NO_TARGET] += bool(tensor.accuracy_breaches)
    return {
        target: {
            "outputs": len(figures),
            "breached": breached[target],
            "snr_db_min": _worst(_figures(x.get("snr_db") for x in figures), min),
            "cosine_min": _worst(_figures(x.get("cosine") for x in figures), min),
        }
        for target, figures in sorted(measured.items())
    }


def build_summary(
    records: Sequence[TestRecord],
    meta: RunMeta,
    *,
    history: RunHistory | None = None,
) -> SummaryDocument:
    """The run's summary; ``history``: its ``history`` entry (:class:`RunHistory`), None when
    not known."""
    totals = _zero()  # plus "quarantined" when a listed test failed (quarantine.count)
    per_board: dict[str, dict[str, Any]] = {}
    per_target: dict[str, dict[str, int]] = {}
    by_backend = {"simulated": _zero(), "hardware": _zero(), "not run": _zero()}
    no_board = 0
    for record in records:
        where = record.provenance
        entry = per_board.setdefault(
            record.board or NO_BOARD,
            {
                "target": record.target,
                "backend": record.backend,
                "simulated": False,
                "ran_hw": 0,
                "ran_sim": 0,
                "runtime_versions": {},
                **_zero(),
            },
        )
        target = per_target.setdefault(record.target or NO_TARGET, _zero())
        for counts in (totals, entry, target, by_backend[_KIND[where]]):
            counts[record.outcome] = counts.get(record.outcome, 0) + 1
        if where:
            entry[f"ran_{where}"] += 1
        entry["simulated"] |= where == "sim"
        entry["runtime_versions"].update(record.runtime_versions)
        no_board += record.board is None
    for entry in per_board.values():
        entry["kind"] = board_kind(entry)
    stability = stability_summary(records)
    return {
        "schema": SCHEMA_VERSION,
        "meta": meta.copy(),
        # a failed run although no test failed (nothing reached a board), with the reason
        "run_failure": meta.get("run_failure") or None,
        # what was damaged outside this run (an earlier run's files, the history's lock) and
        # left out: named, never fatal
        "run_warnings": [str(w) for w in meta.get("run_warnings") or []],
        "total": len(records),
        "outcomes": totals,
        "simulated": sum(by_backend["simulated"].values()),
        "hardware": sum(by_backend["hardware"].values()),
        "not_run": sum(by_backend["not run"].values()),
        "no_board": no_board,
        "by_backend": by_backend,
        "per_board": dict(sorted(per_board.items())),
        "per_target": dict(sorted(per_target.items())),
        "board_health": _health(records),
        # each board's health kept across runs (state, since, cause, history), when stored
        "health_history": dict(meta.get("health_history") or {}),
        # per target; each case's figures are in its record and in the measurements file
        "latency": _latency_by_target(records),
        "accuracy": _accuracy_by_target(records),
        # every baseline finding of the run, in the records' order
        "regressions": [finding.copy() for record in records for finding in record.regressions],
        # passes that needed a retry, and the quarantine list's cases (each a count and a list)
        "unstable": stability["unstable"],
        "quarantine": stability["quarantine"],
        "board_logs": board_log_summary(records),
        "history": history.copy() if history is not None else None,
        "records_file": RECORDS_FILE,
        "measurements_file": MEASUREMENTS_FILE,
    }
