"""Baselines: each case's latency and accuracy against the same case in the last K complete runs
of the same run key (``--baseline-*``, ``--no-baseline``, ``--history-keep``), and the run kept in
the history (docs/model-developer/figures.md#baselines-and-regressions, docs/farm/history.md)."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from npu_hil.harness.history import DEFAULT_KEEP
from npu_hil.harness.plugin.records import RUN_KEY, ItemInfo, config_run_kind, run_folder

if TYPE_CHECKING:
    from npu_hil.harness.history.baseline import Settings
    from npu_hil.harness.history.model import CasePoint, Regression, RunEntry
    from npu_hil.harness.history.store import History
    from npu_hil.harness.history.trends import TrendsView
    from npu_hil.harness.report.records import TestRecord
    from npu_hil.harness.report.runmeta import RunMeta
    from npu_hil.harness.report.summary import RunHistory


RUN_KEY_INPUT = "npu_hil_run_key"


class BaselineRegression(AssertionError):
    """A figure outside its baseline's band in a test that fails on it (a perf test's latency,
    an accuracy figure of a test with accuracy thresholds): a failure, not an error."""


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise ValueError(text)
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("npu-hil")
    group.addoption(
        "--baseline-runs",
        metavar="K",
        type=_positive_int,
        default=10,
        help="a case's baseline is made from the last K complete runs of the same suite, "
        "inventory and selection (default: 10)",
    )
    group.addoption(
        "--baseline-k",
        metavar="K",
        type=_non_negative,
        default=3.0,
        help="the band is median ± k · 1.4826 · MAD (default: 3)",
    )
    group.addoption(
        "--baseline-floor",
        metavar="PERCENT",
        type=_non_negative,
        default=10.0,
        help="a latency band is at least this percentage of the median wide (default: 10)",
    )
    group.addoption(
        "--history-keep",
        metavar="N",
        type=_positive_int,
        default=DEFAULT_KEEP,
        help=f"the history index keeps the newest N runs (default: {DEFAULT_KEEP})",
    )
    group.addoption(
        "--no-baseline",
        action="store_true",
        help="compare no figure with earlier runs (the run is still kept in the history)",
    )


def settings_of(config: pytest.Config) -> Settings:
    from npu_hil.harness.history.baseline import Settings

    return Settings(
        k=float(config.getoption("baseline_k")),
        runs=int(config.getoption("baseline_runs")),
        latency_floor_percent=float(config.getoption("baseline_floor")),
    )


def history_place(config: pytest.Config) -> tuple[Path, str]:
    """The reports root the history lives in and this run's id there."""
    path = run_folder(config).resolve()
    return path.parent, path.name


def _run_key(config: pytest.Config) -> str:
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    if workerinput.get(RUN_KEY_INPUT):
        return str(workerinput[RUN_KEY_INPUT])
    from npu_hil.harness.report.runmeta import run_key

    return run_key(config_run_kind(config))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, controller side: every worker compares with the controller's run key."""
    node.workerinput[RUN_KEY_INPUT] = _run_key(node.config)


@dataclass
class Baselines:
    """This process's view of the earlier runs, loaded once."""

    history: History
    settings: Settings


BASELINES_KEY = pytest.StashKey[Baselines]()


def baselines(config: pytest.Config) -> Baselines:
    """The earlier runs of this run's kind (none under ``--no-baseline``), loaded on first use."""
    found = config.stash.get(BASELINES_KEY, None)
    if found is None:
        from npu_hil.harness.history.store import History, load_history

        settings = settings_of(config)
        if config.getoption("no_baseline"):
            history = History()
        elif not hasattr(config, "workerinput"):
            # The controller (or a run without workers) reads the earlier runs once, for the
            # baselines and the report's history view alike.
            history = newest_runs(run_history(config).earlier.result(), settings.runs)
        else:
            root, this_run = history_place(config)
            history = load_history(root, _run_key(config), limit=settings.runs, before=this_run)
        found = config.stash[BASELINES_KEY] = Baselines(history, settings)
    return found


def check_run(
    config: pytest.Config, info: ItemInfo, *, perf: bool, accuracy_thresholds: bool
) -> list[Regression]:
    """Evaluate the test's record as it stands (the last model run's latency, every output's
    accuracy so far) against the case's earlier points; the findings replace the record's
    ``regressions`` (:func:`fail_on` raises for the failing ones)."""
    if config.getoption("no_baseline"):
        return []
    from npu_hil.harness.history.baseline import evaluate, finding_dict, new_baseline_note
    from npu_hil.harness.history.model import case_point

    known = baselines(config)
    record = info.record
    point = case_point(replace(record, outcome="passed"), "")
    earlier = known.history.series(point.key)
    record.baseline_note = new_baseline_note(point, earlier)
    findings = evaluate(
        point,
        earlier,
        perf=perf,
        accuracy_thresholds=accuracy_thresholds,
        settings=known.settings,
    )
    record.regressions = [finding_dict(f) for f in findings]
    return findings


def fail_on(findings: list[Regression]) -> None:
    """Raise :class:`BaselineRegression` naming every failing finding (figure, band, runs)."""
    failing = [f for f in findings if f.severity == "failure"]
    if failing:
        raise BaselineRegression(
            "regression against the baseline: " + "; ".join(f.message for f in failing)
        )


def run_history(config: pytest.Config) -> ControllerHistory:
    """The controller's history for this run: its earlier runs, enough for both the baseline's
    window and the report's history view, are read in the background from the first call on
    (each record's point is made as it arrives: at 12,000 cases, both at the end took seconds)."""
    root, this_run = history_place(config)
    found = config.stash.get(CONTROLLER_HISTORY_KEY, None)
    if found is None or found.run_id != this_run:
        from npu_hil.harness.history.flaky import DEFAULT_RUNS  # the report's view, this run too

        runs = max(settings_of(config).runs, DEFAULT_RUNS - 1)
        run_key = _run_key(config)
        earlier: Future[History] = Future()

        def read() -> None:
            from npu_hil.harness.history.store import load_history

            try:
                earlier.set_result(load_history(root, run_key, limit=runs, before=this_run))
            except BaseException as exc:  # re-raised by result(), where the report handles it
                earlier.set_exception(exc)

        threading.Thread(target=read, name="npu-hil-history-read", daemon=True).start()
        found = config.stash[CONTROLLER_HISTORY_KEY] = ControllerHistory(this_run, earlier)
    return found


@dataclass
class ControllerHistory:
    """This run's points (the last attempt of each case wins, in the order of their last
    attempts, as in the report) and the earlier runs being read."""

    run_id: str
    earlier: Future[History]
    points: dict[str, CasePoint] = field(default_factory=dict)
    entry: RunEntry | None = None  # this run's index entry, once the run has ended

    def keep(self, record: TestRecord) -> None:
        from npu_hil.harness.history.model import case_point

        self.points.pop(record.nodeid, None)
        self.points[record.nodeid] = case_point(record, self.run_id)


CONTROLLER_HISTORY_KEY = pytest.StashKey[ControllerHistory]()


def newest_runs(history: History, runs: int) -> History:
    """The newest ``runs`` runs of ``history`` with only their points."""
    from npu_hil.harness.history.store import History

    if runs >= len(history.runs):
        return history
    kept = history.runs[-runs:] if runs > 0 else []
    ids = {e.run_id for e in kept}
    inside = {key: [p for p in series if p.run_id in ids] for key, series in history.points.items()}
    return History(kept, {key: s for key, s in inside.items() if s}, list(history.problems))


def with_run(history: History, entry: RunEntry, points: list[CasePoint]) -> History:
    """``history`` and one more run after its runs (new lists only for this run's cases)."""
    from npu_hil.harness.history.store import History

    merged = dict(history.points)
    for point in points:
        merged[point.key] = [*merged.get(point.key, ()), point]
    return History([*history.runs, entry], merged, list(history.problems))


def pytest_npu_hil_record_kept(config: pytest.Config, record: TestRecord) -> None:
    """Controller: a case's record was appended to the run; its point is made now."""
    run_history(config).keep(record)


def pytest_npu_hil_run_end(
    config: pytest.Config, run_dir: Path, records: list[TestRecord], meta: RunMeta
) -> RunHistory:
    """Controller, end of the session: ``<run>/measurements.json`` and the index entry for the
    run (complete or not, as ``meta`` says); returns summary.json's ``history`` and keeps the
    report's history view for :func:`pytest_npu_hil_run_trends`."""
    from npu_hil.harness.history.model import run_entry
    from npu_hil.harness.history.store import HistoryLockError, update_index, write_measurements

    state = run_history(config)
    if len(state.points) != len({r.nodeid for r in records}):
        for record in records:  # records this run did not see arrive (a rebuilt report)
            state.keep(record)
    points = list(state.points.values())
    entry = run_entry({**meta, "run_id": run_dir.name}, points, config.stash[RUN_KEY].started)
    write_measurements(run_dir, entry, points)
    earlier = state.earlier.result()
    problems = list(earlier.problems)
    if config.getoption("no_baseline"):
        baseline_runs = []
    else:
        loaded = config.stash.get(BASELINES_KEY, None)  # this process compared cases itself
        chosen = (
            loaded.history if loaded is not None else newest_runs(earlier, settings_of(config).runs)
        )
        baseline_runs = [r.run_id for r in chosen.runs]
        problems += [p for p in chosen.problems if p not in problems]
    try:
        indexed: int | None = len(
            update_index(run_dir.parent, entry, keep=int(config.getoption("history_keep")))
        )
    except HistoryLockError as exc:
        problems.append(exc.message)
        indexed = None
    state.entry = entry
    # Damage in earlier runs' files, named in the report's head (run_warnings).
    meta.setdefault("run_warnings", []).extend(problems)
    return {"baseline_runs": baseline_runs, "indexed_runs": indexed}


def pytest_npu_hil_run_trends(config: pytest.Config) -> TrendsView | None:
    """The report's history view: the last runs of this kind and this run when it is complete
    (None when nothing was kept)."""
    from npu_hil.harness.history.flaky import DEFAULT_RUNS as runs
    from npu_hil.harness.history.trends import trends_view

    state = config.stash.get(CONTROLLER_HISTORY_KEY, None)
    if state is None or state.entry is None:
        return None
    earlier, entry = state.earlier.result(), state.entry
    if entry.complete:
        history = with_run(newest_runs(earlier, runs - 1), entry, list(state.points.values()))
    else:
        history = newest_runs(earlier, runs)
    return trends_view(history, runs) if history.runs else None


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(RUN_KEY, None)
    records = state.records if state else []
    for number, line in enumerate(_finding_lines(records) + _new_baseline_lines(records)):
        terminalreporter.write_line(line, yellow=True, bold=number == 0)


NEW_BASELINES_SHOWN = 5


def _new_baseline_lines(records: list[TestRecord]) -> list[str]:
    fresh = [r for r in records if r.baseline_note]
    if not fresh:
        return []
    lines = [
        f"npu-hil: {len(fresh)} case{'s' if len(fresh) != 1 else ''} start a new baseline "
        "(model or inputs changed; not compared with earlier runs)"
    ]
    lines += [f"  {r.board or '(no board)'} {r.nodeid}: {r.baseline_note}" for r in fresh]
    if len(fresh) > NEW_BASELINES_SHOWN:
        hidden = len(fresh) - NEW_BASELINES_SHOWN
        lines[NEW_BASELINES_SHOWN + 1 :] = [f"  ... and {hidden} more (JUnit property baseline)"]
    return lines


def _finding_lines(records: list[TestRecord]) -> list[str]:
    findings = [f for r in records for f in r.regressions]
    if not findings:
        return []
    by = {s: sum(f.get("severity") == s for f in findings) for s in ("failure", "warning", "noisy")}
    head = (
        f"npu-hil: {len(findings)} regression finding{'s' if len(findings) != 1 else ''} "
        f"against the baseline ({by['failure']} failing, {by['warning']} warnings, "
        f"{by['noisy']} noisy)"
    )
    return [head, *(f"  {f.get('severity')}: {f.get('message')}" for f in findings)]
