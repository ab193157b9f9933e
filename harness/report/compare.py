"""This run against the previous runs in the same reports folder.

New failures, fixed, still failing against the run just before; flaky over a window of recent
runs: a test whose pass/fail state flipped more than once (skips and absences are not states).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

from harness.report.records import TestRecord
from harness.report.runs import outcomes_of_run, previous_run_dirs

FLAKY_WINDOW = 5
FAILING = frozenset({"failed", "error"})


def _state(outcome: str | None) -> str | None:
    if outcome in FAILING:
        return "fail"
    if outcome == "passed":
        return "pass"
    return None


def build_comparison(
    run_dir: Path, records: Sequence[TestRecord], window: int = FLAKY_WINDOW
) -> dict[str, Any]:
    current = {r.nodeid: r.outcome for r in records}
    history: list[tuple[str, Mapping[str, str]]] = []
    for past in previous_run_dirs(run_dir, max(window - 1, 1)):
        outcomes = outcomes_of_run(past)
        if outcomes is not None:
            history.append((past.name, outcomes))
    previous_name, previous = history[0] if history else (None, {})
    new_failures, fixed, still_failing = [], [], []
    for nodeid, outcome in current.items():
        before = previous.get(nodeid)
        entry = {"nodeid": nodeid, "outcome": outcome, "previous": before}
        if outcome in FAILING and before in FAILING:
            still_failing.append(entry)
        elif outcome in FAILING:
            new_failures.append(entry)
        elif outcome == "passed" and before in FAILING:
            fixed.append(entry)
    runs_oldest_first = [outcomes for _, outcomes in reversed(history[: window - 1])] + [current]
    flaky = []
    for nodeid in sorted(current):
        trail = [run.get(nodeid) for run in runs_oldest_first]
        states = [s for s in (_state(o) for o in trail) if s is not None]
        flips = sum(1 for a, b in pairwise(states) if a != b)
        if flips > 1:
            flaky.append({"nodeid": nodeid, "flips": flips, "history": trail})
    return {
        "run_id": run_dir.name,
        "previous_run": previous_name,
        "window": [name for name, _ in reversed(history[: window - 1])] + [run_dir.name],
        "new_failures": sorted(new_failures, key=lambda e: str(e["nodeid"])),
        "fixed": sorted(fixed, key=lambda e: str(e["nodeid"])),
        "still_failing": sorted(still_failing, key=lambda e: str(e["nodeid"])),
        "flaky": flaky,
    }
