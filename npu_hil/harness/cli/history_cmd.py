"""``npu-hil history``: the runs kept in a reports folder, per board and case, or ``--export``
(docs/farm/history.md). Exit 0; 2 for a folder with no history or a kind of run it does not hold."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import IO, Any

from npu_hil.harness.cli.common import print_json
from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.history.export import FORMATS, write_export
from npu_hil.harness.history.flaky import ABSENT, DEFAULT_RUNS, CaseHistory, case_histories
from npu_hil.harness.history.store import History, load_history, read_index

STRIP_MARKS = {
    "passed": ("✓", "green"),
    "failed": ("✗", "bold red"),
    "error": ("E", "bold yellow"),
    "skipped": ("s", "dim"),
    ABSENT: ("·", "dim"),
}


class NoHistoryError(NpuHilError, ValueError):
    """The reports folder holds no history of the kind asked for."""


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "history",
        help="trends of the runs kept in a reports folder: outcomes, failing since, flakiness, "
        "latency, SNR; or export every measurement",
    )
    parser.add_argument("--reports", type=Path, default=Path("reports"), help="default: reports")
    parser.add_argument(
        "--key", default=None, help="the kind of run (its run key; default: the newest run's)"
    )
    parser.add_argument(
        "--all-kinds", action="store_true", help="the runs of every kind, not one run key"
    )
    parser.add_argument(
        "--runs",
        type=int,
        metavar="N",
        help=f"the newest N runs (default {DEFAULT_RUNS}; an export: every indexed run)",
    )
    parser.add_argument("--board", metavar="NAME", help="one board's cases")
    parser.add_argument("--case", metavar="SUBSTRING", help="cases whose id has it")
    parser.add_argument("--export", choices=FORMATS)
    parser.add_argument("--out", type=Path, help="export file (default: stdout)")
    parser.add_argument("--json", action="store_true", help="the per-case view as JSON")
    parser.set_defaults(run=run_history)


def _chosen(args: argparse.Namespace) -> tuple[History, str | None]:
    root: Path = args.reports
    index = read_index(root)
    if not index:
        raise NoHistoryError(
            f"no history in {root}: no run there wrote its measurements.json "
            "(a run writes it at its end; see --reports)"
        )
    key = None if args.all_kinds else (args.key or index[-1].run_key)
    if args.runs is not None and args.runs < 1:
        raise NoHistoryError(f"--runs: expected at least 1, got {args.runs}")
    limit = args.runs if args.runs is not None else (len(index) if args.export else DEFAULT_RUNS)
    history = load_history(root, key, limit=limit)
    if not history.runs:
        kinds = sorted({e.run_key for e in index})
        raise NoHistoryError(
            f"no complete run of kind {key!r} in the history of {root} "
            f"(kinds there: {', '.join(kinds) or 'none'})"
        )
    return history, key


def _filtered(history: History, args: argparse.Namespace) -> History:
    """The history with the --board / --case filters applied (for an export)."""
    points = {
        key: series
        for key, series in history.points.items()
        if (args.board is None or key[0] == args.board)
        and (args.case is None or args.case in key[1])
    }
    return History(runs=history.runs, points=points)


def run_history(args: argparse.Namespace) -> int:
    history, key = _chosen(args)
    from npu_hil.harness.report.sanitize import clean_text

    # Damaged runs were left out: said on stderr, one line each, the view goes on.
    for problem in dict.fromkeys(history.problems):
        print(f"npu-hil history: WARNING: {clean_text(problem)}", file=sys.stderr)
    if args.export:
        chosen = _filtered(history, args)
        if args.out is None:
            try:
                write_export(chosen, args.export, sys.stdout)
                sys.stdout.flush()
            except BrokenPipeError:  # `| head`: the reader has what it wanted
                _quiet_stdout()
        else:
            with args.out.open("w", encoding="utf-8", newline="\n") as handle:
                lines = write_export(chosen, args.export, handle)
            print(f"{args.export}: {lines} lines in {args.out}", file=sys.stderr)
        return 0
    cases = case_histories(history, len(history.runs), board=args.board, case=args.case)
    if args.json:
        doc = {
            "run_key": key,
            "runs": [e.to_dict() for e in history.runs],
            "cases": [c.to_dict() for c in cases],
        }
        print_json(doc)
        return 0
    _print_view(history, key, cases, sys.stdout)
    return 0


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the exit's flush does not fail."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.4g}"


def _db(value: float | None) -> str:
    if value is None:
        return "—"
    return "exact" if math.isinf(value) and value > 0 else f"{value:.1f}"


def _strip(case: CaseHistory) -> Any:
    from rich.text import Text

    text = Text()
    for outcome in case.strip:
        mark, style = STRIP_MARKS.get(outcome, ("?", ""))
        text.append(mark, style=style)
    return text


def _print_view(history: History, key: str | None, cases: list[CaseHistory], out: IO[str]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # piped to a file or a CI log: wide enough for a nodeid beside its figures
    console = Console(file=out, highlight=False, width=None if out.isatty() else 200)
    first, last = history.runs[0], history.runs[-1]
    kind = f"kind {key}" if key else "every kind"
    head = (
        f"npu-hil history: {len(history.runs)} runs of {kind}, {first.run_id} .. "
        f"{last.run_id}; {_count(len(cases), 'case')} (strip oldest → newest: ✓ passed "
        "✗ failed E error s skipped · not in the run)"
    )
    console.print(Text(head))
    if not cases:
        console.print("no case matches the filters")
        return
    per_board: dict[str, list[CaseHistory]] = {}
    for case in cases:
        per_board.setdefault(case.board, []).append(case)
    for board, rows in per_board.items():
        failing = sum(c.failing_since is not None for c in rows)
        title = f"{board or '(no board)'}: {_count(len(rows), 'case')}, {failing} failing now"
        table = Table(title=Text(title))
        table.add_column("case", overflow="fold")
        table.add_column("outcomes")
        table.add_column("failing since")
        for figure in ("flaky", "pass", "p50 ms last", "p50 ms median", "SNR dB"):
            table.add_column(figure, justify="right")
        for case in rows:
            since = case.failing_since[0] if case.failing_since else "—"
            rate = "—" if case.pass_rate is None else f"{100 * case.pass_rate:.0f}%"
            table.add_row(
                Text(case.nodeid),
                _strip(case),
                Text(since),
                f"{100 * case.flakiness:.0f}%",
                rate,
                _ms(case.latency_last()),
                _ms(case.latency_median()),
                _db(case.snr_last()),
            )
        console.print(table)
