"""``--quarantine FILE`` and ``--quarantine-verify``: known failures that run but do not fail
the run (docs/farm/quarantine.md). Under pytest-xdist an unknown entry is the workers' collection
error."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from npu_hil.harness.plugin.farm import board_param
from npu_hil.harness.plugin.outcomes import QUARANTINED_ATTR, phase_outcome
from npu_hil.harness.plugin.records import INFO_KEY

if TYPE_CHECKING:
    from npu_hil.harness.farm.quarantine import QuarantineEntry

# Every pytest run declares the options: the list's reader and the report's records are imported
# where a --quarantine list is read, and its per-test hooks registered only then.

ENTRY_ATTR = "npu_hil_quarantine_entry"  # on every report of a listed test: the entry's label


@dataclass
class QuarantineState:
    """The run's quarantine list, and (on the controller) how each listed test came out."""

    entries: tuple[QuarantineEntry, ...]
    verify: bool
    quarantined: str  # the record's outcome, as the report names it
    came_out: dict[str, tuple[str, str]] = field(default_factory=dict)  # nodeid: outcome, entry


ENTRY_KEY = pytest.StashKey["QuarantineEntry"]()  # the name: the class is imported on use


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("npu-hil")
    group.addoption(
        "--quarantine",
        metavar="FILE",
        help="a quarantine list (YAML: test pattern, target or board, reason, link, expires): "
        "listed tests run, and a failure of one is reported as quarantined instead of failing "
        "the run; an expired entry or one that matches no test is a usage error",
    )
    group.addoption(
        "--quarantine-verify",
        action="store_true",
        help="run only the tests the --quarantine list names and report which now pass",
    )


def pytest_configure(config: pytest.Config) -> None:
    given = config.getoption("quarantine", None)
    verify = bool(config.getoption("quarantine_verify", False))
    if given is None:
        if verify:
            raise pytest.UsageError("--quarantine-verify needs the list: --quarantine FILE")
        return
    from npu_hil.harness.farm.quarantine import (
        QuarantineError,
        expired_entries,
        parse_quarantine,
        today_utc,
    )

    path = Path(given)
    if not path.is_absolute():
        path = Path(config.invocation_params.dir) / path
    from npu_hil.harness.files import InputFileError, read_regular
    from npu_hil.harness.yaml_reader import MAX_CHARS

    try:
        # A regular file within the YAML reader's bound: a FIFO is refused, not waited on.
        text = bytes(read_regular(path, "a quarantine file (YAML)", MAX_CHARS)).decode("utf-8")
    except (InputFileError, UnicodeDecodeError) as exc:
        raise pytest.UsageError(f"--quarantine {given}: cannot read the file: {exc}") from None
    try:
        entries = parse_quarantine(text, source=str(given))
    except QuarantineError as exc:
        raise pytest.UsageError(f"--quarantine: {exc.message}") from None
    today = today_utc()
    expired = expired_entries(entries, today)
    if expired:
        raise pytest.UsageError(
            "\n".join(
                f"--quarantine: {e.label}: expired on {e.expires.isoformat()} (today is "
                f"{today.isoformat()}, UTC): fix the test and remove the entry, or give it a "
                "new date"
                for e in expired
            )
        )
    from npu_hil.harness.report.records import QUARANTINED

    state = QuarantineState(entries, verify, QUARANTINED)
    # After the farm (a case's board) and the outcomes (whose report it turns into a quarantined
    # one): its makereport wrapper, registered later, runs outside theirs.
    config.pluginmanager.register(QuarantineRun(state), "npu-hil-quarantine")
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) reports
        config.pluginmanager.register(QuarantineReporter(state), "npu-hil-quarantine-reporter")


class QuarantineRun:
    """The list at work in every process of a run given ``--quarantine`` (registered only then:
    a run without a list pays nothing per test for it)."""

    def __init__(self, state: QuarantineState) -> None:
        self.state = state

    @pytest.hookimpl(tryfirst=True)  # before -k/-m deselect: the whole suite is what entries name
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        state = self.state
        counts: dict[int, int] = {}
        for item in items:
            param = board_param(item)
            board = param.name if param is not None else None
            target = param.target or None if param is not None else None
            matching = [
                e for e in state.entries if e.matches(item.nodeid, board=board, target=target)
            ]
            if not matching:
                continue
            for e in matching:
                counts[e.index] = counts.get(e.index, 0) + 1
            entry = item.stash[ENTRY_KEY] = matching[0]  # the first entry that lists the test
            info = item.stash.get(INFO_KEY, None)
            if info is not None:  # a board test: its record names the entry
                info.record.quarantine = entry.to_dict()
        unknown = [e for e in state.entries if e.index not in counts]
        # Nothing silent: an entry that quarantines the whole run, or most of it, hides every
        # failure there is; it is refused like one that matches nothing.
        sweeping = [
            e for e in state.entries if len(items) > 1 and counts.get(e.index, 0) * 2 > len(items)
        ]
        # A module that failed to collect has no items to match: its collection error fails the
        # run and is what to fix first, not reported as unknown entries.
        if (unknown or sweeping) and not session.testsfailed:
            message = "\n".join(
                [
                    f"--quarantine: {e.label}"
                    + (f" on target {e.target!r}" if e.target else "")
                    + (f" on board {e.board!r}" if e.board else "")
                    + f": matches none of the {len(items)} collected tests (remove the entry, "
                    "or fix its pattern)"
                    for e in unknown
                ]
                + [
                    f"--quarantine: {e.label}: matches {counts[e.index]} of the {len(items)} "
                    "collected tests (more than half: it would hide the run's failures; list "
                    "the failing tests)"
                    for e in sweeping
                ]
            )
            if not hasattr(config, "workerinput"):
                raise pytest.UsageError(message)
            # A pytest-xdist worker: a usage error would crash it and lose the message; a failed
            # collection report reaches the controller, which stops the run and prints it.
            config.hook.pytest_collectreport(
                report=pytest.CollectReport("--quarantine", "failed", message, [])
            )
            items[:] = []
            return
        if state.verify:
            keep = [i for i in items if ENTRY_KEY in i.stash]
            dropped = [i for i in items if ENTRY_KEY not in i.stash]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
            items[:] = keep

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        entry = item.stash.get(ENTRY_KEY, None)
        if entry is None:
            return report
        setattr(report, ENTRY_ATTR, entry.label)
        if call.when == "call" and phase_outcome(call, report) == "failed":
            # Counted as pytest counts an xfail (not a failure; the traceback kept), shown as
            # its own status by pytest_report_teststatus below.
            report.outcome = "skipped"
            report.wasxfail = f"quarantined: {entry.reason}"
            setattr(report, QUARANTINED_ATTR, True)
        return report

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, Any] | None:
        if getattr(report, QUARANTINED_ATTR, False):
            return self.state.quarantined, "Q", ("QUARANTINED", {"yellow": True})
        return None


class QuarantineReporter:
    """Where the run's listed tests came out, said at the end (on the controller)."""

    def __init__(self, state: QuarantineState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        label = getattr(report, ENTRY_ATTR, None)
        if label is None or (report.when != "call" and report.passed):
            return
        if getattr(report, QUARANTINED_ATTR, False):
            outcome = self.state.quarantined
        elif report.failed and report.when != "call":
            outcome = "error"
        else:
            outcome = report.outcome
        self.state.came_out[report.nodeid] = (outcome, label)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        came_out = self.state.came_out
        write = terminalreporter.write_line
        for nodeid in sorted(n for n, (o, _) in came_out.items() if o == self.state.quarantined):
            write(f"npu-hil: quarantined (not failing the run): {nodeid}: {came_out[nodeid][1]}")
        if not self.state.verify:
            return
        passing = sorted(n for n, (o, _) in came_out.items() if o == "passed")
        write(f"npu-hil: quarantine verify: {len(passing)} of {len(came_out)} listed tests pass")
        for nodeid in passing:
            write(f"npu-hil: now passes, its entry can go: {nodeid}: {came_out[nodeid][1]}")
