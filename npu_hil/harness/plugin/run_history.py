"""The controller's history work for one run, done while the run runs rather than after it.

From the run's first record on, the earlier runs of the same kind are read in a background
thread (the controller of a pytest-xdist run is idle while its workers test), and each record's
point is made as the record arrives. At the end of the session the run's measurements, the
baseline's run list and the report's history view come from what is in memory: at 12,000 cases,
reading the earlier runs and this run's own measurements back at the end took several seconds
of the run's bookkeeping.

One read serves both windows: the baseline's last K complete runs before this one and the page's
view of the last runs of the kind (this one included, when complete).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from npu_hil.harness.history.model import CasePoint, RunEntry
    from npu_hil.harness.history.store import History
    from npu_hil.harness.report.records import TestRecord

__all__ = [
    "CONTROLLER_HISTORY_KEY",
    "ControllerHistory",
    "controller_history",
    "newest_runs",
    "with_run",
]


class _EarlierRuns(threading.Thread):
    """``load_history`` in the background; :meth:`result` waits for it and re-raises what it
    raised, so damage in earlier runs is met where the report handles it."""

    def __init__(self, root: Path, run_key: str, limit: int, before: str) -> None:
        super().__init__(name="npu-hil-history-read", daemon=True)
        self.root, self.run_key, self.limit, self.before = root, run_key, limit, before
        self.history: History | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        from npu_hil.harness.history.store import load_history

        try:
            self.history = load_history(
                self.root, self.run_key, limit=self.limit, before=self.before
            )
        except BaseException as exc:  # handed to the caller of result()
            self.error = exc

    def result(self) -> History:
        self.join()
        if self.error is not None:
            raise self.error
        assert self.history is not None
        return self.history


@dataclass
class ControllerHistory:
    """This run's points (the last attempt of each case wins, in the order of their last
    attempts, as in the report) and the earlier runs being read."""

    run_id: str
    earlier: _EarlierRuns
    points: dict[str, CasePoint] = field(default_factory=dict)
    entry: RunEntry | None = None  # this run's index entry, once the run has ended

    def keep(self, record: TestRecord) -> None:
        from npu_hil.harness.history.points import case_point

        self.points.pop(record.nodeid, None)
        self.points[record.nodeid] = case_point(record, self.run_id)


CONTROLLER_HISTORY_KEY = pytest.StashKey[ControllerHistory]()


def controller_history(
    config: pytest.Config, root: Path, run_id: str, run_key: str, runs: int
) -> ControllerHistory:
    """The history state of run ``run_id`` in ``root``, made (and the read of up to ``runs``
    earlier runs of ``run_key`` started) on first use."""
    found = config.stash.get(CONTROLLER_HISTORY_KEY, None)
    if found is None or found.run_id != run_id:
        earlier = _EarlierRuns(root, run_key, runs, run_id)
        earlier.start()
        found = config.stash[CONTROLLER_HISTORY_KEY] = ControllerHistory(run_id, earlier)
    return found


def newest_runs(history: History, runs: int) -> History:
    """The newest ``runs`` runs of ``history`` with only their points."""
    from npu_hil.harness.history.store import History

    if runs >= len(history.runs):
        return history
    kept = history.runs[-runs:] if runs > 0 else []
    ids = {e.run_id for e in kept}
    points = {}
    for key, series in history.points.items():
        inside = [p for p in series if p.run_id in ids]
        if inside:
            points[key] = inside
    return History(kept, points, list(history.problems))


def with_run(history: History, entry: RunEntry, points: list[CasePoint]) -> History:
    """``history`` and one more run after its runs (new lists only for this run's cases)."""
    from npu_hil.harness.history.store import History

    merged = dict(history.points)
    for point in points:
        merged[point.key] = [*merged.get(point.key, ()), point]
    return History([*history.runs, entry], merged, list(history.problems))
