"""``npu-hil nightly``: the regression suite in a pytest subprocess, live progress, the report
(docs/farm/nightly.md). The run folder is made here and named to pytest in ``NPU_HIL_RUN_DIR``,
so the progress display follows its ``records.jsonl``; pytest's output goes to
``<run>/pytest.log``. Exit: pytest's; 2 for bad input before pytest starts."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from npu_hil.harness.cli.common import DEFAULT_INVENTORY, add_board_args, load_cli_inventory
from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.report.records import NO_BOARD, OUTCOMES, QUARANTINED, TestRecord
from npu_hil.harness.report.runmeta import (
    COMPLETE_EXITS,
    LAUNCHED_BY_ENV,
    RunMeta,
    harness_version,
    run_key,
    run_kind,
)
from npu_hil.harness.report.runs import (
    RECORDS_FILE,
    RUN_DIR_ENV,
    SUMMARY_FILE,
    PastSummary,
    load_records,
    new_run_dir,
    read_summary,
)
from npu_hil.harness.report.summary import board_kind
from npu_hil.harness.report.writer import COMPARISON_FILE, HTML_FILE, write_run

if TYPE_CHECKING:
    from npu_hil.harness.report.compare import ComparisonDocument

DEFAULT_SUITE = Path("tests") / "hil"
"""A suite of the user's own beside the inventory, run when the current folder has one."""
SHIPPED_SUITE = "npu_hil.harness.suite"
"""The suite that ships with npu-hil, run otherwise, wherever the user stands."""
POLL_SECONDS = 0.25
LOG_FILE = "pytest.log"
LOG_TAIL_LINES = 15
# pytest's exit codes for a run that did not finish its tests
INCOMPLETE_EXITS = frozenset({2, 3, 4})


class NightlyError(NpuHilError):
    """A nightly run that cannot start (no suite)."""


def add_parser(sub: Any) -> None:
    nightly = sub.add_parser(
        "nightly",
        help="run the regression suite on the farm and write the report",
        description="Run the regression suite (./tests/hil/ when the current folder has one, "
        "else the suite shipped with npu-hil, npu_hil.harness.suite) with the npu-hil pytest "
        "plugin, show "
        "progress per board, write reports/<run-id>/. Arguments after -- go to pytest.",
    )
    add_board_args(
        nightly,
        sim_fault="every job of a simulated board, e.g. NAME=slow:percent=20 (repeatable); not "
        "part of the run key, recorded in the summary's meta",
    )
    nightly.add_argument("-n", dest="workers", metavar="N", help="pytest-xdist workers, or auto")
    nightly.add_argument("--reports", type=Path, default=Path("reports"), help="reports root")
    nightly.add_argument("--backend", choices=("auto", "sim", "hw"), help="default: auto")
    nightly.add_argument(
        "--suite",
        type=Path,
        help="the regression suite (default: ./tests/hil if there is one, else the suite shipped "
        "with npu-hil)",
    )
    nightly.add_argument(
        "--simfarm",
        metavar="KINDS",
        help="rehearse over real links: simulated boards behind an sshd (ssh) and/or serial "
        "consoles (serial) on 127.0.0.1, started for the run and stopped after it",
    )
    nightly.add_argument(
        "--compare-with",
        metavar="RUN",
        help="compare with this run (an id under the reports root, or a folder) instead of the "
        "last complete run of the same suite, inventory and selection",
    )
    runtimes = nightly.add_mutually_exclusive_group()
    runtimes.add_argument(
        "--runtime",
        metavar="NAME",
        help="run on the runtime version NAME of the boards that have it (the inventory's "
        "runtimes); boards without it are left out",
    )
    runtimes.add_argument(
        "--runtime-matrix",
        action="store_true",
        help="run the suite once per runtime the inventory's boards list, each its own run "
        "and report, then write matrix-<run-id>/matrix.html: the outcomes side by side, the "
        "cases that differ first",
    )
    nightly.add_argument("pytest_args", nargs="*", help="extra pytest arguments, after --")
    nightly.set_defaults(run=run_nightly)


def shipped_suite() -> Path:
    """Where the suite shipped with npu-hil is installed (found, not imported: it is pytest's)."""
    spec = importlib.util.find_spec(SHIPPED_SUITE)
    if spec is None or not spec.submodule_search_locations:
        raise NightlyError(f"the suite shipped with npu-hil ({SHIPPED_SUITE}) is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def pytest_command(args: argparse.Namespace, suite: Path) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", str(suite)]
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        # With plugin autoloading on, the entry points already load npu-hil and xdist (and
        # ``-p npu_hil.harness.plugin`` would register it twice); with it off, name them.
        cmd += ["-p", "npu_hil.harness.plugin", *(["-p", "xdist"] if args.workers else [])]
    if suite == shipped_suite():
        # The same case ids wherever npu-hil is installed (a checkout, a venv, site-packages),
        # so that the history compares one night with the next.
        cmd += ["--rootdir", str(suite)]
        # pytest's cache would land in the installed package (a checkout, a venv,
        # site-packages): nothing of a run is written there.
        cmd += ["-p", "no:cacheprovider"]
        # The suite has no property tests; hypothesis's plugin, where it is installed, imports
        # all of hypothesis at the end of every process of the run to print its statistics.
        cmd += ["-p", "no:hypothesispytest"]
    for flag, values in (
        ("--reports", [args.reports]),
        ("--inventory", [args.inventory]),
        ("--simfarm", [args.simfarm]),
        ("--backend", [args.backend]),
        ("--target", args.target),
        ("--board", args.board),
        ("--sim-fault", args.sim_fault),
        ("--compare-with", [args.compare_with]),
        ("--runtime", [args.runtime]),
    ):
        cmd += [part for value in values if value for part in (flag, str(value))]
    if args.workers:
        # Board cases carry xdist_group(board): one worker per board starts its agent once.
        cmd += ["-n", str(args.workers), "--dist", "loadgroup"]
    return cmd + list(args.pytest_args)


def resolve_suite(suite: Path | None) -> Path:
    if suite is None:
        own = Path.cwd() / DEFAULT_SUITE
        return own if own.exists() else shipped_suite()
    if not suite.exists():
        raise NightlyError(f"no regression suite at {suite}: pass --suite PATH to an existing one")
    return suite


class RecordTail:
    """Reads the whole lines appended to records.jsonl since the last call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.per_board: dict[str, Counter[str]] = defaultdict(Counter)
        self.simulated: dict[str, bool] = {}
        self.ran_on: dict[str, set[str]] = defaultdict(set)

    def poll(self) -> None:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return
        end = chunk.rfind(b"\n")
        if end < 0:
            return
        self.offset += end + 1
        for line in chunk[: end + 1].splitlines():
            try:
                data = json.loads(line)
            except ValueError:
                continue
            board = data.get("board") or NO_BOARD
            self.per_board[board][str(data.get("outcome"))] += 1
            self.simulated[board] = self.simulated.get(board, False) or bool(data.get("simulated"))
            try:
                where = TestRecord.from_dict(data).provenance
            except (TypeError, ValueError):
                continue
            if where:
                self.ran_on[board].add(where)

    def kind(self, board: str) -> str:
        """As the summary names it: HW, SIM, HW+SIM, or - while nothing ran on the board."""
        ran = self.ran_on.get(board, set())
        return board_kind({"ran_hw": "hw" in ran, "ran_sim": "sim" in ran})


PROGRESS_ROWS = 20
"""Boards shown in the live table, those with failures first; the rest are summed in one row.
A row per board at 200 boards was taller than a screen and took 0.26 s to draw, four times a
second: a core of the two the workers need."""
_TROUBLE = ("failed", "error", "quarantined")


def _progress_table(tail: RecordTail, elapsed: float) -> Any:
    from rich.table import Table

    done = sum(sum(counts.values()) for counts in tail.per_board.values())
    table = Table(title=f"npu-hil nightly: {done} done, {elapsed:.0f}s")
    table.add_column("board")
    table.add_column("SIM/HW")
    for outcome in OUTCOMES:
        table.add_column(outcome, justify="right")
    boards = sorted(
        tail.per_board,
        key=lambda b: (not any(tail.per_board[b][o] for o in _TROUBLE), b),
    )
    for board in boards[:PROGRESS_ROWS]:
        counts = tail.per_board[board]
        table.add_row(board, tail.kind(board), *(str(counts[o]) for o in OUTCOMES))
    rest = boards[PROGRESS_ROWS:]
    if rest:
        summed = sum((tail.per_board[board] for board in rest), Counter[str]())
        table.add_row(f"{len(rest)} more boards", "", *(str(summed[o]) for o in OUTCOMES))
    return table


def _run_with_progress(cmd: list[str], run_dir: Path, env: dict[str, str]) -> int:
    from rich.console import Console
    from rich.live import Live

    console = Console(stderr=True)
    tail = RecordTail(run_dir / RECORDS_FILE)
    console.print(f"npu-hil nightly: {run_dir}, pytest output in {run_dir / LOG_FILE}")
    from npu_hil.harness.plugin.interrupt import sigterm_interrupts

    # A SIGTERM to the nightly stops pytest as Ctrl-C does (below): its report is still written.
    sigterm_interrupts()
    started = time.monotonic()
    with (run_dir / LOG_FILE).open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        assert proc.stdout is not None
        copier = threading.Thread(target=_copy_scrubbed, args=(proc.stdout, log), daemon=True)
        copier.start()
        try:
            with Live(console=console, refresh_per_second=4, transient=True) as live:
                while proc.poll() is None:
                    tail.poll()
                    live.update(_progress_table(tail, time.monotonic() - started))
                    time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            proc.terminate()
        code = proc.wait()
        copier.join(timeout=COPY_TIMEOUT_S)
        return code


COPY_TIMEOUT_S = 30.0
MAX_LOG_LINE = 1 << 20


def _copy_scrubbed(source: IO[bytes], log: IO[bytes]) -> None:
    """pytest's output into ``pytest.log``, line by line, without secrets (a ``password=`` a
    board printed) and with control characters visible: the log is a report file like the
    others. A line longer than MAX_LOG_LINE is cut into pieces of that size."""
    from npu_hil.harness.redact import scrub
    from npu_hil.harness.report.sanitize import clean_text

    for line in iter(lambda: source.readline(MAX_LOG_LINE), b""):
        text = line.decode("utf-8", errors="replace")
        log.write(clean_text(scrub(text)).encode("utf-8", errors="replace"))
        log.flush()


def _print_summary(run_dir: Path, code: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    summary_path = run_dir / SUMMARY_FILE
    if not summary_path.exists():
        log = run_dir / LOG_FILE
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        lines = text.splitlines()
        console.print("\n".join(lines[-LOG_TAIL_LINES:]), markup=False, highlight=False)
        console.print(f"no test records were written (pytest exit {code}); its output: {log}")
        return
    summary = read_summary(run_dir)
    if summary is None:
        console.print(f"{summary_path} cannot be read", markup=False, highlight=False)
        return
    mode = provenance_line(summary)
    outcomes = summary["outcomes"]
    # A quarantined column only when a listed test failed, as summary.json counts it.
    columns = (*OUTCOMES, *((QUARANTINED,) if outcomes.get(QUARANTINED) else ()))
    table = Table(title=f"npu-hil nightly {run_dir.name}: {summary['total']} tests, {mode}")
    for head in ("board", "target", "SIM/HW"):
        table.add_column(head)
    for outcome in columns:
        table.add_column(outcome, justify="right")
    for board, entry in summary["per_board"].items():
        table.add_row(
            board,
            str(entry.get("target") or ""),
            "" if board == NO_BOARD else str(entry.get("kind", "")),
            *(str(entry.get(o, 0)) for o in columns),
        )
    table.add_row("total", "", "", *(str(outcomes.get(o, 0)) for o in columns), style="bold")
    console.print(table)
    if summary.get("run_failure"):
        console.print(f"FAILED RUN: {summary['run_failure']}", markup=False, highlight=False)
    comparison_path = run_dir / COMPARISON_FILE
    if comparison_path.exists():
        # comparison.json as this run's report wrote it (build_comparison)
        comparison = cast("ComparisonDocument", json.loads(comparison_path.read_text("utf-8")))
        console.print(comparison_line(comparison), markup=False, highlight=False)
    for board, events in summary.get("board_health", {}).items():
        for event in events:
            line = f"board health: {board}: {event['event']} ({event['cases']} cases)"
            console.print(line, markup=False, highlight=False)
    console.print(f"report: {(run_dir / HTML_FILE).resolve()}")
    if code in INCOMPLETE_EXITS:
        console.print(f"pytest stopped early (exit {code}); its output is in {run_dir / LOG_FILE}")


def provenance_line(summary: PastSummary) -> str:
    """The same words as report.html's banner: hardware counts only cases a hardware board ran."""
    hw, sim = int(summary.get("hardware", 0)), int(summary.get("simulated", 0))
    not_run = int(summary.get("not_run", 0))
    rest = f", {not_run} ran on no board" if not_run else ""
    if hw == 0 and sim == 0:
        return f"NOTHING RAN on a board{rest}"
    if hw == 0:
        return f"SIMULATED ({sim} on simulated boards{rest})"
    if sim == 0:
        return f"HARDWARE ({hw} on hardware{rest})"
    return f"MIXED ({hw} on hardware, {sim} simulated{rest})"


def comparison_line(comparison: ComparisonDocument) -> str:
    previous = comparison.get("previous_run")
    if not previous:
        return f"no comparison: {comparison.get('baseline', 'no earlier run')}"
    when = comparison.get("previous_started") or "?"
    return (
        f"since {previous} (started {when}; {comparison.get('baseline', '')}): "
        f"{len(comparison['new_failures'])} new failures, {len(comparison['fixed'])} fixed, "
        f"{len(comparison['still_failing'])} still failing, {len(comparison['flaky'])} flaky"
    )


def _nightly_kind(args: argparse.Namespace, suite: Path) -> RunMeta:
    """The run key of a report nightly rebuilds itself, from its own arguments."""
    inventory = args.inventory
    if inventory is None and DEFAULT_INVENTORY.exists():
        inventory = DEFAULT_INVENTORY
    try:
        where = suite.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        where = suite.resolve().as_posix()
    if suite == shipped_suite():
        where = SHIPPED_SUITE  # the same key wherever it is installed
    selection = {
        "target": list(args.target),
        "board": list(args.board),
        "backend": args.backend,
        "simfarm": args.simfarm,
        "runtime": args.runtime,
        "pytest_args": list(args.pytest_args),
    }
    kind = run_kind([where], inventory.resolve() if inventory else None, selection)
    return {"run_kind": kind, "run_key": run_key(kind), "harness_version": harness_version()}


def _check_inventory(path: Path | None, args: argparse.Namespace) -> list[str]:
    """The runtime names the inventory's boards list, after checking the inventory and the
    selection before pytest starts: a typo is one ``file:line:col`` line (exit 2), not an error
    per test module or a run of skipped cases. A labgrid section's places are the run's to check."""
    from npu_hil.harness.farm.selection import runtime_names
    from npu_hil.harness.plugin.sim_faults import parse_board_faults, selection_problems

    faults = parse_board_faults(args.sim_fault)  # SimFaultError: exit 2
    inventory = load_cli_inventory(path)
    if inventory.labgrid is None:
        problem = selection_problems(
            inventory, args.target, args.board, args.backend or "auto", faults, args.runtime
        )
        if problem is not None:
            raise NightlyError(problem)
    return runtime_names(inventory)


def run_nightly(args: argparse.Namespace) -> int:
    suite = resolve_suite(args.suite)
    inventory = args.inventory
    matrix = bool(args.runtime_matrix)
    selecting = args.target or args.board or args.sim_fault or args.runtime or matrix
    if inventory is None and selecting and not args.simfarm:
        # pytest's default when run from the checkout; --simfarm writes its own inventory
        inventory = DEFAULT_INVENTORY if DEFAULT_INVENTORY.is_file() else None
    runtimes: list[str] = []
    if inventory is not None or (selecting and not args.simfarm):
        # no file: the plugin's built-in simulated farm is the one the faults must fit
        runtimes = _check_inventory(inventory, args)
    if not matrix:
        return _run_once(args, suite)[1]
    if not runtimes:
        raise NightlyError(
            f"--runtime-matrix: the boards of {inventory or 'the built-in farm'} list no "
            "runtimes (give a board `runtimes:` in the inventory)"
        )
    return _run_matrix(args, suite, runtimes)


def _run_matrix(args: argparse.Namespace, suite: Path, runtimes: list[str]) -> int:
    from npu_hil.harness.report.matrix import MATRIX_HTML, MatrixRun, build_matrix, write_matrix

    runs = []
    for name in runtimes:
        one = argparse.Namespace(**{**vars(args), "runtime": name, "runtime_matrix": False})
        run_dir, code = _run_once(one, suite)
        runs.append(MatrixRun(runtime=name, run_dir=run_dir, exit_code=code))
    folder = new_run_dir(args.reports)
    folder = folder.rename(folder.with_name(f"matrix-{folder.name}"))
    table = build_matrix(runs)
    write_matrix(folder, table)
    print(
        f"runtime matrix: {len(runs)} runtimes, {len(table['cases'])} cases, "
        f"{table['disagreements']} differ between runtimes: {(folder / MATRIX_HTML).resolve()}"
    )
    return max((run.exit_code for run in runs), default=0)


def _run_once(args: argparse.Namespace, suite: Path) -> tuple[Path, int]:
    """One pytest run of the suite into a new run folder, its report and summary printed:
    (the folder, pytest's exit status)."""
    from npu_hil.harness.plugin.sim_faults import parse_board_faults

    run_dir = new_run_dir(args.reports)
    launched_by = shlex.join(["npu-hil", *sys.argv[1:]])
    env = {**os.environ, RUN_DIR_ENV: str(run_dir.resolve()), LAUNCHED_BY_ENV: launched_by}
    cmd = pytest_command(args, suite)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    code = _run_with_progress(cmd, run_dir, env)
    if not (run_dir / SUMMARY_FILE).exists() and (run_dir / RECORDS_FILE).exists():
        # pytest died before the plugin wrote the report: rebuild it from what completed
        meta: RunMeta = {
            "started": started,
            "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            # pytest's own exit says whether every test ran (the plugin did not write the
            # report: it crashed at the end, or the suite records without it)
            "incomplete": code not in COMPLETE_EXITS,
            "complete": code in COMPLETE_EXITS,
            "pytest_exit": code,
            "argv": cmd[3:],
            "launched_by": launched_by,
            **_nightly_kind(args, suite),
            "sim_faults": [f.to_dict() for f in parse_board_faults(args.sim_fault)],
        }
        write_run(run_dir, load_records(run_dir), meta)
    _print_summary(run_dir, code)
    return run_dir, code
