"""``npu-hil health``: each board's health as kept across runs, and ``--clear BOARD``
(docs/farm/health.md). Exit 0 when no listed board is bad, 1 when one is, 2 for a board the
inventory does not have."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from npu_hil.harness.cli.common import add_board_args, load_cli_inventory, print_json
from npu_hil.harness.errors import NpuHilError

EVENTS_SHOWN = 3


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "health",
        help="each board's health kept across runs (good, bad, unknown); --clear forgets a bad "
        "board",
    )
    add_board_args(parser, targets=False)
    parser.add_argument(
        "--clear",
        action="append",
        default=[],
        metavar="BOARD",
        help="forget that BOARD is marked bad: its next health check decides (repeatable)",
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="the farm's workdir (default: the farm's own)"
    )
    parser.add_argument("--json", action="store_true", help="the boards' health as JSON")
    parser.set_defaults(run=run_health)


def _boards(args: argparse.Namespace) -> tuple[list[str], str]:
    inventory = load_cli_inventory(args.inventory)
    names = [b.name for b in inventory.boards]
    for name in [*args.board, *args.clear]:
        if name not in names:
            raise NpuHilError(
                f"no board {name!r} in {inventory.source} (its boards: {', '.join(names)})"
            )
    return (list(args.board) or names), inventory.source


def run_health(args: argparse.Namespace) -> int:
    from npu_hil.harness.farm.health_store import BAD, HealthStore, health_folder, state_key
    from npu_hil.harness.folders import default_workdir

    boards, source = _boards(args)
    workdir = args.workdir if args.workdir is not None else default_workdir()
    # The state of this folder's inventory (or of this project's built-in farm), as its runs
    # keep it: another project's boards of the same names are not listed.
    store = HealthStore(health_folder(workdir, state_key(source)))
    for name in args.clear:
        store.clear(name, by="npu-hil health --clear")
    kept = {name: store.read(name) for name in boards}
    _trusted(store.folder)
    from npu_hil.harness.report.sanitize import clean_text

    # a health file that could not be believed (damaged, not a regular file, another user's):
    # one named line on stderr; the board reads as ``unknown``
    for name, health in kept.items():
        if health.problem:
            print(
                f"npu-hil: warning: {clean_text(name)}: health file ignored, read as unknown: "
                f"{clean_text(health.problem)}",
                file=sys.stderr,
            )
    if args.json:
        print_json({name: health.to_dict() for name, health in kept.items()})
    else:
        _print_table(kept, source, store.folder)
    return 1 if any(h.state == BAD for h in kept.values()) else 0


def _trusted(folder: Path) -> None:
    """UnsafeFolderError (exit 2, one line) when the health folder is not this user's own or
    others may write it (OpenSSH's StrictModes): whoever can write there decides which boards
    are good, and a listing of its boards as ``unknown`` would hide that. Nothing there yet is
    nothing kept."""
    from npu_hil.harness.errors import UnsafeFolderError
    from npu_hil.harness.folders import check_private_dir

    try:
        check_private_dir(folder)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise UnsafeFolderError(
            f"{folder}: expected the folder of the boards' health, got a path through a file"
        ) from None


def _print_table(kept: dict[str, Any], source: str, folder: Path) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from npu_hil.harness.report.sanitize import clean_text

    table = Table(title=f"board health kept across runs ({source}; {folder})")
    for column in ("board", "state", "since", "cause", "last events"):
        table.add_column(column)
    styles = {"good": "green", "bad": "bold red", "unknown": "dim"}
    for name, health in kept.items():
        events = "\n".join(
            f"{e.time} {e.what}" + (f" ({e.run_id})" if e.run_id else "")
            for e in health.history[-EVENTS_SHOWN:]
        )
        # Text cells: a cause holding "[...]" is shown as written, never read as markup; a
        # terminal escape from a board's log or a health file is shown as \x1b, never run.
        table.add_row(
            Text(clean_text(name)),
            Text(clean_text(health.state), style=styles.get(health.state, "")),
            Text(clean_text(health.since)),
            Text(clean_text(health.problem or health.cause)),
            Text(clean_text(events)),
        )
    Console().print(table)
