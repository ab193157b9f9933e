"""Records: one :class:`~npu_hil.harness.report.records.TestRecord` per board test, JUnit
properties, and the run's report (its kind and meta read off the config) written on the
controller at the end of the session.

A worker hangs the record on the test's teardown report (``npu_hil_record``) for pytest-xdist to
ship; the controller appends each to ``<run>/records.jsonl`` as it arrives and writes the run at
the end. Other features fill a test's record (:func:`item_info`); nothing here writes theirs."""

from __future__ import annotations

import copy
import gc
import os
import sys
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from npu_hil.harness.plugin.inventory import (
    health_key,
    inventory_line,
    inventory_path,
    inventory_source,
)
from npu_hil.harness.plugin.outcomes import phase_outcome

if TYPE_CHECKING:
    from npu_hil.harness.farm.health_store import HealthDocument
    from npu_hil.harness.report.records import TestRecord
    from npu_hil.harness.report.runmeta import RunKind, RunMeta
    from npu_hil.harness.report.runs import RunStart
    from npu_hil.harness.report.writer import CaseTexts

RECORD_ATTR = "npu_hil_record"
RUN_ID_KEY = "npu_hil_run_id"
HEATMAPS = "heatmaps"
PROPERTY_PREFIX = "npu_hil."
# options whose presence changes which cases run
SELECTION_OPTIONS = (
    "keyword",
    "markexpr",
    "target",
    "board",
    "backend",
    "simfarm",
    "lf",
    "failedfirst",
    "deselect",
    "ignore",
    "ignore_glob",
    "quarantine_verify",
    "runtime",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("npu-hil")
    group.addoption(
        "--reports",
        metavar="DIR",
        default="reports",
        help="the reports root; each run writes reports/<run-id>/ (default: reports/)",
    )
    group.addoption(
        "--compare-with",
        metavar="RUN",
        help="compare the run with this run (an id under the reports root, or a folder) instead "
        "of the last complete run of the same suite, inventory and selection",
    )


@dataclass(frozen=True)
class Phase:
    """One phase of a test as its record counts it."""

    outcome: str  # phase_outcome: passed, skipped, failed or error
    message: str
    duration_s: float


@dataclass
class ItemInfo:
    """One test's record as it fills, and what is kept beside it until the record is done.

    The board, run_model and outcome code write ``record`` (the board, where it ran, versions,
    tensors, board events, retries); ``build_record`` adds the outcome from the ``phases``.
    ``fallback_reason`` and ``transport`` go into the JUnit properties only.
    """

    record: TestRecord
    fallback_reason: str = ""
    transport: str = ""
    phases: dict[str, Phase] = field(default_factory=dict)

    def properties(self) -> dict[str, str]:
        """The JUnit properties of the test (strings, as JUnit has them)."""
        from npu_hil.harness.report.boardlog import board_log_properties
        from npu_hil.harness.report.perf import board_state_properties, latency_properties
        from npu_hil.harness.report.records import accuracy_properties

        record = self.record
        props = {
            "board": record.board or "",
            "target": record.target or "",
            "backend": record.backend or "",
            "simulated": "true" if record.simulated else "false",
        }
        if self.transport:
            props["transport"] = self.transport
        if self.fallback_reason:
            props["fallback_reason"] = self.fallback_reason
        if record.retried:
            props["retries"] = str(len(record.retried))
        call = self.phases.get("call")
        if record.retried and call is not None and call.outcome == "passed":
            props["unstable"] = record.retried[0]
        props.update({f"quarantine.{k}": v for k, v in sorted(record.quarantine.items())})
        props.update({f"runtime.{k}": v for k, v in sorted(record.runtime_versions.items())})
        # Deprecated: this release still writes the old spelling beside the new one, for CI jobs
        # that read it; the next one writes ``runtime.`` only, as the run's own junit.xml does.
        props.update({f"version.{k}": v for k, v in sorted(record.runtime_versions.items())})
        props.update({f"artifact.{k}": v for k, v in sorted(record.artifact_hashes.items())})
        props.update(latency_properties(record.latency))
        props.update(board_state_properties(record.board_state))
        props.update(accuracy_properties(record.tensors))
        # each finding's message, its severity first
        props.update(
            {
                f"regression.{f.get('metric')}": f"{f.get('severity')}: {f.get('message')}"
                for f in record.regressions
            }
        )
        if record.cross_api:
            props["cross_api"] = record.cross_api
        if record.preprocessing:
            props["preprocessing"] = record.preprocessing
        if record.baseline_note:
            props["baseline"] = record.baseline_note
        props.update(board_log_properties(record))
        return props


INFO_KEY = pytest.StashKey[ItemInfo]()


def item_info(item: pytest.Item) -> ItemInfo:
    """The test's :class:`ItemInfo`, created on first use (marks the test as a board test)."""
    info = item.stash.get(INFO_KEY, None)
    if info is None:
        from npu_hil.harness.report.records import TestRecord

        # ran_on "": on neither until a board session runs the test.
        record = TestRecord(nodeid=item.nodeid, outcome="", duration_s=0.0, ran_on="")
        info = item.stash[INFO_KEY] = ItemInfo(record)
    return info


@dataclass
class RunState:
    """Per-run state of the controller (or of a run without xdist)."""

    reports_root: Path
    run_id: str = ""  # chosen on first use (run_id()): a run of plain tests never needs one
    started: float = field(default_factory=time.time)
    run_dir: Path | None = None
    records: list[TestRecord] = field(default_factory=list)
    failed_attempts: dict[str, TestRecord] = field(default_factory=dict)  # first, by node id
    failure: str | None = None  # why the run failed although no test did
    warnings: list[str] = field(default_factory=list)  # damage met outside the run, named
    texts: CaseTexts | None = None  # each case's JUnit element and page row, made as it arrives


RUN_KEY = pytest.StashKey[RunState]()


def reports_root(config: pytest.Config) -> Path:
    root = Path(config.getoption("reports"))
    return root if root.is_absolute() else Path(config.invocation_params.dir) / root


def run_id(config: pytest.Config) -> str:
    """The run's id, stamped with the time the session started, chosen by the controller before
    a test needs it (so a failure message can name the file where it will stay) and handed to
    pytest-xdist workers."""
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    if workerinput.get(RUN_ID_KEY):
        return str(workerinput[RUN_ID_KEY])
    state = config.stash[RUN_KEY]
    if not state.run_id:
        from npu_hil.harness.report.runs import new_run_id

        state.run_id = new_run_id(datetime.fromtimestamp(state.started, timezone.utc))
    return state.run_id


def run_folder(config: pytest.Config) -> Path:
    """This run's folder, made or not: the one ``npu-hil nightly`` named (its parent is the
    reports root), else ``<reports>/<run id>``."""
    from npu_hil.harness.report.runs import RUN_DIR_ENV

    named = os.environ.get(RUN_DIR_ENV)
    return Path(named) if named else reports_root(config) / run_id(config)


def heatmap_dir(config: pytest.Config) -> Path:
    """Where this process writes a run's heatmaps: ``<run>/heatmaps/``, their final
    place, so a path printed in a failure message still exists after the run. Not created
    here: a run that writes no file leaves no folder."""
    return run_folder(config) / HEATMAPS


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from npu_hil.harness.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        config.stash[RUN_KEY] = RunState(reports_root(config))
        # pytest-xdist's controller: the report is written before xdist waits for its workers
        # to exit, while they close their boards' agents, not after.
        distributed = config.getoption("dist", default="no") != "no"
        collector = XdistRunCollector(config) if distributed else RunCollector(config)
        config.pluginmanager.register(collector, "npu-hil-run-collector")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, controller side: tell each worker the run's id (no files)."""
    node.workerinput[RUN_ID_KEY] = run_id(node.config)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Freeze the heap (``gc.freeze``) before the last garbage collections of a process that
    exits after its session: a pytest-xdist worker, or the pytest ``npu-hil nightly`` starts.
    Over 6,000-12,000 cases' reports each of pytest's and the interpreter's final walks took
    1-3 s. A pytest run inside a longer-lived process is never frozen: what it leaves must still
    be collectable."""
    if hasattr(config, "workerinput") or _nightly_run(config):
        gc.freeze()


def _nightly_run(config: pytest.Config) -> bool:
    state = config.stash.get(RUN_KEY, None)
    if state is None or state.run_dir is None:
        return False  # no board case ran: nothing imported for it either
    from npu_hil.harness.report.runs import RUN_DIR_ENV

    return bool(os.environ.get(RUN_DIR_ENV))


# ------------------------------------------------------------------------- the run's kind


def _suite_of(config: pytest.Config) -> list[str]:
    """The test paths pytest was given, relative to the rootdir when under it."""
    root = config.rootpath
    paths = []
    for arg in config.args:
        path = Path(arg.split("::")[0])
        path = path if path.is_absolute() else Path(config.invocation_params.dir) / path
        try:
            rel = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            rel = path.resolve().as_posix()
        paths.append(rel + ("::" + arg.split("::", 1)[1] if "::" in arg else ""))
    return paths


def config_run_kind(config: pytest.Config) -> RunKind:
    """The run kind (suite, inventory, selection:
    :func:`npu_hil.harness.report.runmeta.run_kind`) of a pytest session."""
    from npu_hil.harness.report.runmeta import run_kind

    selection = {name: config.getoption(name, None) for name in SELECTION_OPTIONS}
    if selection.get("backend") == "auto":
        selection["backend"] = None
    return run_kind(_suite_of(config), inventory_path(config), selection)


# ------------------------------------------------------------------------- per test


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    info = item.stash.get(INFO_KEY, None)
    if info is not None:
        # Set before the report is made: the report copies the item's user_properties.
        props = dict(item.user_properties)
        for key, value in info.properties().items():
            if props.get(PROPERTY_PREFIX + key) != value:
                item.user_properties.append((PROPERTY_PREFIX + key, value))
    report = yield
    if info is None:
        return report
    info.phases[call.when] = Phase(phase_outcome(call, report), _message(report), report.duration)
    if call.when == "teardown":
        setattr(report, RECORD_ATTR, build_record(info).to_dict())
    _scrub_longrepr(report)
    return report


def _scrub_longrepr(report: pytest.TestReport) -> None:
    """A board test's failure text as the console, ``pytest.log`` and ``--junitxml`` show it:
    without secrets (a ``password=`` from a board's log in an exception) and with control
    characters visible (a board's ``\\x1b[2J`` never reaches the terminal). Replaced only when
    cleaning changes it, so pytest's own rendering of a clean failure is kept."""
    if report.longrepr is None or isinstance(report.longrepr, tuple):
        return
    from npu_hil.harness.redact import scrub
    from npu_hil.harness.report.sanitize import clean_text

    text = str(report.longrepr)
    cleaned = clean_text(scrub(text))
    if cleaned != text:
        report.longrepr = cleaned


def _message(report: pytest.TestReport) -> str:
    if report.passed:
        return ""
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message)
    return str(report.longrepr or "")


def build_record(info: ItemInfo) -> TestRecord:
    """The test's record, done: an error in setup or teardown (or infrastructure trouble under
    any phase, as :func:`~npu_hil.harness.plugin.outcomes.phase_outcome` counts it) wins over the
    call's outcome."""
    from npu_hil.harness.report.records import QUARANTINED

    outcome, message, longrepr = "passed", "", ""
    for name in ("setup", "call", "teardown"):
        phase = info.phases.get(name)
        if phase is None:
            continue
        if phase.outcome in ("failed", "error", QUARANTINED):
            if outcome not in ("failed", "error"):
                text = phase.message
                outcome, message = phase.outcome, text.split("\n", 1)[0] if text else phase.outcome
                longrepr = text
        elif phase.outcome == "skipped" and outcome == "passed":
            outcome, message = "skipped", phase.message
    record = copy.deepcopy(info.record)  # the record is done: later writes must not reach it
    return replace(
        record,
        outcome=outcome,
        # passed only because a model run was retried: the first failure's reason
        unstable=record.retried[0] if outcome == "passed" and record.retried else "",
        duration_s=round(sum(p.duration_s for p in info.phases.values()), 6),
        message=message,
        longrepr=longrepr,
        properties=info.properties(),
        ran_on="" if outcome == "skipped" else record.ran_on,
        board_events=list(dict.fromkeys(record.board_events)),
    )


# ------------------------------------------------------------------------- controller


def rerun_unstable(record: TestRecord, failed: Mapping[str, TestRecord]) -> TestRecord:
    """``record`` flagged unstable when it passed after an earlier attempt of the same test in
    this run failed (a rerun of the whole test, as pytest-rerunfailures makes): the first failed
    attempt's reason (``failed``: each test's first failed attempt, by node id). The report
    keeps the last attempt (``npu_hil.harness.report.writer.write_run``)."""
    if record.outcome != "passed" or record.unstable:
        return record
    attempt = failed.get(record.nodeid)
    if attempt is None:
        return record
    reason = attempt.message or attempt.outcome
    return replace(record, unstable=f"{attempt.outcome} on an earlier attempt: {reason}")


class RunCollector:
    """Controller side: gathers the records as reports arrive and writes the run at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.state = config.stash[RUN_KEY]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, RECORD_ATTR, None)
        if data is None:
            return
        # pytest keeps every report to the end of the session (the terminal's stats): without
        # this, each record is held twice, once here as a dict.
        delattr(report, RECORD_ATTR)
        from npu_hil.harness.report.records import TestRecord
        from npu_hil.harness.report.runs import append_record, run_dir_for_session

        # A dict of failed attempts, not a scan of every record so far: 12,000 cases made
        # that scan quadratic.
        record = rerun_unstable(TestRecord.from_dict(data), self.state.failed_attempts)
        if record.outcome in ("failed", "error"):
            self.state.failed_attempts.setdefault(record.nodeid, record)
        if self.state.run_dir is None or self.state.texts is None:
            from npu_hil.harness.plugin.interrupt import sigterm_interrupts
            from npu_hil.harness.report.writer import CaseTexts

            self.state.run_dir = run_dir_for_session(self.state.reports_root, run_id(self.config))
            _write_run_start(self.config, self.state)
            self.state.texts = CaseTexts(self.state.run_dir)
            # The controller of an xdist run: a SIGTERM from here on still writes the report.
            sigterm_interrupts()
        # The record is scrubbed once, here, as the case ends: the report at the end takes the
        # run's records as clean (at 12,000 cases a second pass was 3 s of its bookkeeping).
        kept = append_record(self.state.run_dir, record)
        self.state.records.append(kept)
        self.state.texts.add(kept)
        self.config.hook.pytest_npu_hil_record_kept(config=self.config, record=kept)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        state = self.state
        config = self.config
        if (
            not state.records
            and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
            and (config.getoption("target") or config.getoption("board"))
        ):
            # --target/--board deselected every case: no silent "no tests ran" either.
            state.failure = (
                "no test reached a board: the filters left no board case to run"
                + filters_text(config)
            )
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        if not state.records or state.run_dir is None:
            return
        from npu_hil.harness.plugin.sim_faults import parse_board_faults
        from npu_hil.harness.report.runmeta import run_meta
        from npu_hil.harness.report.summary import nothing_reached
        from npu_hil.harness.report.writer import write_run

        # No silent green: a run whose board cases all missed their boards has failed.
        state.failure = nothing_reached(state.records)
        if state.failure is not None:
            state.failure += filters_text(config)
            if exitstatus == pytest.ExitCode.OK:
                session.exitstatus = exitstatus = pytest.ExitCode.TESTS_FAILED
        meta: RunMeta = {
            "run_id": state.run_dir.name,
            "inventory": inventory_source(config),
            "backend": config.getoption("backend"),
            "targets": list(config.getoption("target")),
            "boards": list(config.getoption("board")),
            "started": _iso(state.started),
            "finished": _iso(time.time()),
            "argv": list(config.invocation_params.args),
            "python": sys.version.split()[0],
            "run_failure": state.failure or "",
            "health_history": _health_history(config, state.records),
            **run_meta(
                config_run_kind(config),
                exitstatus=int(exitstatus),
                started=state.started,
                rootpath=config.rootpath,
                args=list(config.invocation_params.args),
                compare_with=config.getoption("compare_with", None) or "",
                stopped=bool(session.shouldfail or session.shouldstop),
            ),
            # what --sim-fault injected (it parsed when the farm feature configured the run), so
            # a reader knows the run was rigged (no part of the run key)
            "sim_faults": [
                f.to_dict() for f in parse_board_faults(config.getoption("sim_fault", None) or [])
            ],
        }
        meta["run_warnings"] = state.warnings
        # After the meta (whether the run is complete), before the report that shows it. What
        # earlier runs left on disk is read here and may be damaged: whatever it does, this
        # run's report is written, and the damage is named in it.
        history = trends = None
        try:
            history = config.hook.pytest_npu_hil_run_end(
                config=config, run_dir=state.run_dir, records=state.records, meta=meta
            )
            # The page's trends: the earlier runs read during the run, and this one.
            trends = config.hook.pytest_npu_hil_run_trends(config=config)
        except Exception as exc:  # earlier runs' damage never loses this run's report
            from npu_hil.harness.redact import scrub

            reason = scrub(f"{type(exc).__name__}: {exc}")[:500]
            state.warnings.append(f"the history was not updated: {reason}")
        write_run(
            state.run_dir,
            state.records,
            meta,
            history=history,
            trends=trends,
            scrubbed=True,
            texts=state.texts,
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        # Which farm the boards came from, said by a run that used boards and by no other.
        if self.state.records:
            terminalreporter.write_line(inventory_line(self.config))
        elif self.state.failure is None and not self.state.warnings and self.state.run_dir is None:
            return  # a run of other tests: nothing to say, nothing to import
        from npu_hil.harness.report.records import last_attempts
        from npu_hil.harness.report.sanitize import clean_text

        # Messages from boards and files: their control characters shown, never run.
        if self.state.failure is not None:
            terminalreporter.write_line(
                f"npu-hil: FAILED RUN: {clean_text(self.state.failure)}", red=True, bold=True
            )
        for warning in self.state.warnings:
            terminalreporter.write_line(f"npu-hil: WARNING: {clean_text(warning)}", yellow=True)
        for record in last_attempts(self.state.records):
            if record.unstable:
                terminalreporter.write_line(
                    "npu-hil: UNSTABLE (passed only on retry): "
                    f"{clean_text(record.nodeid)}: {clean_text(record.unstable)}",
                    yellow=True,
                )
        if self.state.run_dir is not None:
            terminalreporter.write_line(f"npu-hil: report in {self.state.run_dir}")


class XdistRunCollector(RunCollector):
    """The controller of a pytest-xdist run: its session ends before xdist's own end (which
    waits for every worker to exit, each closing its agents: 1-2 s), so the two overlap."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        super().pytest_sessionfinish(session, exitstatus)


def filters_text(config: pytest.Config) -> str:
    """The options that chose the boards, to say with a case or a run that reached none."""
    parts = [f"--target {t}" for t in config.getoption("target")]
    parts += [f"--board {b}" for b in config.getoption("board")]
    backend = config.getoption("backend")
    if backend != "auto" and config.getoption("simfarm", None) is None:
        left_out = ": simulated boards left out" if backend == "hw" else ""
        parts.append(f"--backend {backend}{left_out}")
    if config.getoption("runtime", None):
        parts.append(f"--runtime {config.getoption('runtime')}: boards without it left out")
    return f" (filters: {' '.join(parts)})" if parts else ""


def _write_run_start(config: pytest.Config, state: RunState) -> None:
    """run.json: the run's key, so a later run knows this one even if it never ends."""
    from npu_hil.harness.report.runmeta import run_key
    from npu_hil.harness.report.runs import write_run_start

    assert state.run_dir is not None
    start: RunStart = {
        "run_id": state.run_dir.name,
        "run_key": run_key(config_run_kind(config)),
        "started": _iso(state.started),
    }
    write_run_start(state.run_dir, start)


def _health_history(config: pytest.Config, records: list[TestRecord]) -> dict[str, HealthDocument]:
    """The stored health (state and history, kept across runs beside the board locks) of the
    boards this run's cases met."""
    from npu_hil.harness.farm.health_store import health_folder, stored_health
    from npu_hil.harness.folders import default_workdir

    boards = sorted({r.board for r in records if r.board})
    return stored_health(health_folder(default_workdir(), health_key(config)), boards)


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, timezone.utc).isoformat(timespec="seconds")


def heatmap_path(config: pytest.Config, path: str | Path) -> str:
    """The run-folder-relative name of a heatmap this run wrote under ``<run>/heatmaps/``."""
    try:
        relative = Path(path).resolve().relative_to(heatmap_dir(config).resolve())
    except ValueError:
        return str(path)
    return f"{HEATMAPS}/{relative.as_posix()}"
