"""``npu-hil simfarm up|down|status`` (docs/farm/simfarm.md). ``up`` exits 0 when the farm runs
(2 when it cannot start or is already up); ``down`` 0; ``status`` 0 when every process of the farm
is alive, else 1.

``npu-hil simfarm arm64-root build|path|status``: the emulated aarch64 boards' root
(docs/farm/emulated.md). ``build`` exits 0 or 2; ``path`` and ``status`` exit 1 when the root for
the current recipe is not built (or, for ``status``, a tool is missing)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from npu_hil.harness.cli.common import count_up_to, number_from_zero, print_json
from npu_hil_testkit.emulated import DEFAULT_RECIPE, build_root, cache_dir, find_root, missing_tools
from npu_hil_testkit.emulated.root import BUILD_TIMEOUT
from npu_hil_testkit.simfarm import farm

MAX_STOP_TIMEOUT = 3600.0
"""``down --timeout``: an hour between SIGTERM and SIGKILL is already more than any process of
the farm takes to stop."""


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
    return names


def add_parser(sub: Any) -> None:
    simfarm = sub.add_parser(
        "simfarm",
        help="simulated boards behind a real sshd and serial consoles on 127.0.0.1",
        description="Start simulated boards reached over real transports on 127.0.0.1 (OpenSSH "
        "sshd, socat ptys, ser2net) and write the inventory that reaches them; stop them again.",
    )
    actions = simfarm.add_subparsers(dest="action", required=True, parser_class=type(simfarm))
    up = actions.add_parser("up", help="start the farm and write DIR/inventory.yaml")
    up.add_argument(
        "--boards",
        type=count_up_to(farm.MAX_BOARDS),
        default=1,
        metavar="N",
        help="boards per target and transport",
    )
    up.add_argument(
        "--targets",
        type=_names,
        metavar="T,T,...",
        help="targets (default: every target npu-hil knows)",
    )
    up.add_argument(
        "--transports",
        type=_names,
        default=["ssh"],
        metavar="ssh,serial",
        help="how the boards are reached (default: ssh)",
    )
    up.add_argument(
        "--serial",
        choices=farm.SERIAL_MODES,
        default="pty",
        help="serial consoles as a local pty, or served by ser2net as rfc2217:// (default: pty)",
    )
    up.set_defaults(run=run_up)

    down = actions.add_parser("down", help="stop everything the farm started")
    down.add_argument(
        "--timeout",
        type=number_from_zero(MAX_STOP_TIMEOUT, f"seconds from 0 to {MAX_STOP_TIMEOUT:g}"),
        default=5.0,
        help="seconds between SIGTERM and SIGKILL",
    )
    down.set_defaults(run=run_down)

    status = actions.add_parser("status", help="which of the farm's processes are alive")
    status.set_defaults(run=run_status)
    dir_help = f"the farm's folder (default: {farm.default_dir()})"
    for action in (up, down, status):
        action.add_argument("--dir", type=Path, help=dir_help)
        action.add_argument("--json", action="store_true")

    _add_root_actions(actions)


def run_up(args: argparse.Namespace) -> int:
    state = farm.up(
        args.dir,
        boards=args.boards,
        targets=args.targets,
        transports=args.transports,
        serial=args.serial,
    )
    if args.json:
        print_json(state.to_dict())
        return 0
    kinds = sorted({board.transport for board in state.boards})
    print(
        f"simulated farm up: {len(state.boards)} boards ({', '.join(kinds)}), "
        f"{len(state.processes)} processes"
    )
    print(f"inventory: {state.inventory}")
    return 0


def run_down(args: argparse.Namespace) -> int:
    results = farm.down(args.dir, timeout=args.timeout)
    if args.json:
        print_json([{**r.record.to_dict(), "outcome": r.outcome} for r in results])
        return 0
    if not results:
        print("nothing running")
        return 0
    notes = {
        "replaced": "left alone: the pid belongs to another process now",
        "stopped": "was not running",
    }
    for result in results:
        note = notes.get(result.outcome, result.outcome)
        print(f"{result.record.name} (pid {result.record.pid}): {note}")
    return 0


def run_status(args: argparse.Namespace) -> int:
    current = farm.status(args.dir)
    if current is None:
        if args.json:
            print(json.dumps({"running": False, "processes": []}))
        else:
            print("nothing running")
        return 1
    if args.json:
        print_json(current.to_dict())
    else:
        state = current.state
        print(f"farm in {state.dir} (started {state.started}), inventory {state.inventory}")
        for record, process in current.processes:
            port = f", port {record.port}" if record.port is not None else ""
            print(f"  {record.name}: pid {record.pid} {process}{port}")
    return 0 if current.running else 1


def _add_root_actions(actions: Any) -> None:
    root = actions.add_parser(
        "arm64-root",
        help="the emulated aarch64 boards' root filesystem (Debian arm64 under qemu-user)",
        description="Build, locate or describe the arm64 Debian root the emulated boards run "
        f"(cached under {cache_dir()}/roots, one folder per recipe).",
    )
    verbs = root.add_subparsers(dest="verb", required=True, parser_class=type(root))
    build = verbs.add_parser(
        "build", help="build the root, or reuse the one built from this recipe"
    )
    build.add_argument("--force", action="store_true", help="rebuild even when one is cached")
    build.add_argument(
        "--timeout", type=float, default=BUILD_TIMEOUT, help="seconds the build may take"
    )
    build.add_argument("--json", action="store_true")
    build.set_defaults(run=run_root_build)
    path = verbs.add_parser("path", help="print the root's folder (its launcher is launch-python)")
    path.set_defaults(run=run_root_path)
    status = verbs.add_parser("status", help="whether the root for the current recipe is built")
    status.add_argument("--json", action="store_true")
    status.set_defaults(run=run_root_status)


def run_root_build(args: argparse.Namespace) -> int:
    root = build_root(force=args.force, timeout=args.timeout)
    if args.json:
        print_json(root.to_dict())
    else:
        print(f"arm64 root: {root.root} (Python {root.python_version}, numpy {root.numpy_version})")
        print(f"python: {root.launcher}")
        print(f"built in {root.seconds:.1f} s")
    return 0


def run_root_path(args: argparse.Namespace) -> int:
    root = find_root()
    if root is None:
        print(f"not built (recipe {DEFAULT_RECIPE.key()}): npu-hil simfarm arm64-root build")
        return 1
    print(root.dir)
    return 0


def run_root_status(args: argparse.Namespace) -> int:
    root = find_root()
    missing = missing_tools(build=root is None)
    report = {
        "key": DEFAULT_RECIPE.key(),
        "built": root is not None,
        "missing": missing,
        **(root.to_dict() if root is not None else {}),
    }
    if args.json:
        print_json(report)
    elif root is None:
        print(f"recipe {DEFAULT_RECIPE.key()}: not built")
    else:
        print(f"recipe {DEFAULT_RECIPE.key()}: built in {root.seconds:.1f} s, {root.root}")
        print(
            f"  Python {root.python_version}, numpy {root.numpy_version}; python: {root.launcher}"
        )
    if not args.json:  # the JSON report lists them already: its stdout is one document
        for tool in missing:
            print(f"  missing: {tool}")
    return 0 if root is not None and not missing else 1
