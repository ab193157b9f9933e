"""This run against earlier runs of its kind in the same reports folder: new failures, fixed,
still failing, flaky, a trend per board (docs/farm/nightly.md, "Since the previous run"). A
same-kind run that did not finish is never compared with, nor skipped silently
(``previous_incomplete``, and the ``baseline`` sentence)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

from typing_extensions import TypedDict

from npu_hil.harness.report.records import NO_BOARD, OUTCOMES, TestRecord
from npu_hil.harness.report.runmeta import RunMeta
from npu_hil.harness.report.runs import (
    RECORDS_FILE,
    RUN_ID_PATTERN,
    PastSummary,
    read_outcomes,
    read_run_start,
    read_summary,
    root_problem,
)

FLAKY_WINDOW = 5
TREND_RUNS = 10
SCAN_LIMIT = 200  # past folders looked at, newest first
FAILING = frozenset({"failed", "error"})


class ChangedCase(TypedDict):
    """A case in comparison.json's ``new_failures``, ``fixed`` or ``still_failing``."""

    nodeid: str
    outcome: str
    previous: str | None


class FlakyCase(TypedDict):
    """A case in comparison.json's ``flaky``: its pass/fail flips and outcomes, oldest first."""

    nodeid: str
    flips: int
    history: list[str | None]


class TrendPoint(TypedDict):
    """A run in comparison.json's ``trend``: its outcomes per board."""

    run_id: str
    started: str
    per_board: dict[str, dict[str, int]]


class IncompleteRun(TypedDict):
    """A same-kind run that did not finish, in comparison.json's ``previous_incomplete``."""

    run_id: str
    why: str


class ComparisonDocument(TypedDict):
    """comparison.json (:func:`build_comparison`): this run against earlier runs of its kind."""

    run_id: str
    run_key: str
    previous_run: str | None
    previous_started: str
    previous_commit: str
    baseline: str
    previous_incomplete: list[IncompleteRun]
    window: list[str]
    new_failures: list[ChangedCase]
    fixed: list[ChangedCase]
    still_failing: list[ChangedCase]
    flaky: list[FlakyCase]
    trend: list[TrendPoint]


def outcome_state(outcome: str | None) -> str | None:
    """A case's pass/fail state: "fail", "pass", or None (skipped or absent: no state)."""
    if outcome in FAILING:
        return "fail"
    if outcome == "passed":
        return "pass"
    return None


def state_flips(states: Sequence[str]) -> int:
    """How often consecutive pass/fail states differ."""
    return sum(1 for a, b in pairwise(states) if a != b)


def same_kind_runs(
    run_dir: Path, key: str, limit: int
) -> tuple[list[tuple[Path, PastSummary]], list[IncompleteRun]]:
    """Up to ``limit`` complete runs before ``run_dir`` with run key ``key``, newest first, and
    the runs of that key newer than the newest of them that did not finish, each with why."""
    found: list[tuple[Path, PastSummary]] = []
    incomplete: list[IncompleteRun] = []
    for past in _earlier_runs(run_dir) if key else []:
        summary = read_summary(past)
        meta = (summary or {}).get("meta", {})
        if summary is not None and meta.get("run_key") == key and meta.get("complete"):
            found.append((past, summary))
            if len(found) >= limit:
                break
        # run.json's key is the plugin's; a summary rebuilt after a crash may carry another
        elif not found and key in {
            (read_run_start(past) or {}).get("run_key"),
            meta.get("run_key"),
        }:
            why = incomplete_reason(past, summary)
            if why is not None:
                incomplete.append({"run_id": past.name, "why": why})
    return found, incomplete


def _earlier_runs(run_dir: Path) -> list[Path]:
    """The run folders beside ``run_dir`` that started before it, newest first (bounded); none
    when the reports folder is not trusted (:func:`root_problem`)."""
    if root_problem(run_dir.parent) is not None:
        return []
    siblings = sorted(
        (p for p in run_dir.parent.iterdir() if RUN_ID_PATTERN.match(p.name) and p.is_dir()),
        reverse=True,
    )
    return [p for p in siblings[:SCAN_LIMIT] if p.name < run_dir.name]


def incomplete_reason(run_dir: Path, summary: PastSummary | None) -> str | None:
    """Why the run at ``run_dir`` is incomplete, or None when it finished. ``summary`` is its
    summary.json (None: it has none)."""
    if summary is None:
        try:
            with (run_dir / RECORDS_FILE).open("rb") as handle:
                count = sum(1 for line in handle if line.strip())
        except OSError:
            count = 0
        return f"it crashed or was killed: no summary.json, {count} test records written"
    meta = summary.get("meta", {})
    if meta.get("complete"):
        return None
    code = meta.get("pytest_exit")
    # str(): a summary read back may hold "" there
    exit_text = f" (pytest exit {code})" if code is not None and str(code) else ""
    if meta.get("incomplete"):
        return f"it crashed{exit_text}; its report was rebuilt from the records it left"
    return f"it stopped before its last test{exit_text}"


def _asked(run_dir: Path, name: str) -> tuple[Path, PastSummary] | None:
    path = Path(name)
    for candidate in (path, run_dir.parent / name):
        if candidate.is_dir() and candidate.resolve() != run_dir.resolve():
            summary = read_summary(candidate)
            if summary is not None:
                return candidate, summary
    return None


def _cases(run: Path, summary: PastSummary) -> list[tuple[str, str, str]]:
    """A past run's (nodeid, board, outcome) rows: its outcomes.json, or the records a summary
    of an older harness embeds."""
    rows = read_outcomes(run)
    if rows is not None:
        return rows
    return [
        (str(r["nodeid"]), str(r.get("board") or ""), str(r.get("outcome")))
        for r in summary.get("records", [])
        if isinstance(r, dict) and "nodeid" in r
    ]


def _outcomes(rows: Sequence[tuple[str, str, str]]) -> dict[str, str]:
    return {nodeid: outcome for nodeid, _, outcome in rows}


def _board_counts(rows: Sequence[tuple[str, str, str]]) -> dict[str, dict[str, int]]:
    per_board: dict[str, dict[str, int]] = {}
    for _, board, outcome in rows:
        counts = per_board.setdefault(board or NO_BOARD, dict.fromkeys(OUTCOMES, 0))
        counts[outcome] = counts.get(outcome, 0) + 1
    return per_board


def build_comparison(
    run_dir: Path, records: Sequence[TestRecord], meta: RunMeta
) -> ComparisonDocument:
    key = str(meta.get("run_key") or "")
    current = {r.nodeid: r.outcome for r in records}
    history, since_baseline = same_kind_runs(run_dir, key, max(FLAKY_WINDOW, TREND_RUNS) - 1)
    asked_name = str(meta.get("compare_with") or "")
    baseline: tuple[Path, PastSummary] | None
    incomplete: list[IncompleteRun] = []
    if asked_name:
        baseline = _asked(run_dir, asked_name)
        how = f"asked with --compare-with {asked_name}"
        if baseline is None:
            how = f"--compare-with {asked_name}: no finished run there"
        else:
            why = incomplete_reason(*baseline)
            if why is not None:
                incomplete = [{"run_id": baseline[0].name, "why": why}]
                how += f"; that run is INCOMPLETE: {why}, so tests it did not reach are absent"
    else:
        baseline = history[0] if history else None
        how = (
            "the last complete run of the same suite, inventory and selection"
            if baseline is not None
            else "no earlier complete run of the same suite, inventory and selection"
        )
        incomplete = since_baseline
        if incomplete:
            latest = incomplete[0]
            more = f" ({len(incomplete) - 1} more incomplete before it)" if incomplete[1:] else ""
            how += (
                f"; the previous run of this kind, {latest['run_id']}, is INCOMPLETE: "
                f"{latest['why']}{more}; it is not compared with"
            )
    untrusted = root_problem(run_dir.parent)
    if untrusted is not None and not asked_name:
        how = f"{untrusted}; earlier runs not compared"
    previous = _outcomes(_cases(*baseline)) if baseline is not None else {}
    changed: dict[str, list[ChangedCase]] = {"new_failures": [], "fixed": [], "still_failing": []}
    ordered = sorted(current)  # every list of the comparison is in nodeid order
    for nodeid in ordered:
        outcome, before = current[nodeid], previous.get(nodeid)
        if outcome in FAILING:
            kind = "still_failing" if before in FAILING else "new_failures"
        elif outcome == "passed" and before in FAILING:
            kind = "fixed"
        else:
            continue
        changed[kind].append({"nodeid": nodeid, "outcome": outcome, "previous": before})
    flaky_runs = history[: FLAKY_WINDOW - 1]
    past_cases = {run: _cases(run, summary) for run, summary in history[: TREND_RUNS - 1]}
    runs_oldest_first = [_outcomes(past_cases[run]) for run, _ in reversed(flaky_runs)]
    runs_oldest_first.append(current)
    flaky: list[FlakyCase] = []
    for nodeid in ordered:
        trail = [run.get(nodeid) for run in runs_oldest_first]
        flips = state_flips([s for s in map(outcome_state, trail) if s is not None])
        if flips > 1:
            flaky.append({"nodeid": nodeid, "flips": flips, "history": trail})
    trend: list[TrendPoint] = [
        {
            "run_id": past.name,
            "started": summary.get("meta", {}).get("started", ""),
            "per_board": _board_counts(past_cases[past]),
        }
        for past, summary in reversed(history[: TREND_RUNS - 1])
    ]
    trend.append(
        {
            "run_id": run_dir.name,
            "started": meta.get("started", ""),
            "per_board": _board_counts([(r.nodeid, r.board or "", r.outcome) for r in records]),
        }
    )
    baseline_meta = baseline[1].get("meta", {}) if baseline is not None else {}
    return {
        "run_id": run_dir.name,
        "run_key": key,
        "previous_run": baseline[0].name if baseline is not None else None,
        "previous_started": baseline_meta.get("started", ""),
        "previous_commit": baseline_meta.get("git_commit", ""),
        "baseline": how,
        "previous_incomplete": incomplete,
        "window": [past.name for past, _ in reversed(flaky_runs)] + [run_dir.name],
        "new_failures": changed["new_failures"],
        "fixed": changed["fixed"],
        "still_failing": changed["still_failing"],
        "flaky": flaky,
        "trend": trend,
    }
