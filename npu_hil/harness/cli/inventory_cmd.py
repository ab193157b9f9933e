"""``npu-hil inventory init|check``: a starting inventory to edit (never overwritten without
``--force``), and a check of one as a run reads it (docs/farm/inventory.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from npu_hil.harness.cli.common import DEFAULT_INVENTORY, print_json


def add_parser(sub: Any) -> None:
    inventory = sub.add_parser("inventory", help="write a starting inventory, or check one")
    actions = inventory.add_subparsers(dest="action", required=True)

    init = actions.add_parser(
        "init", help="write a commented starting inventory: one simulated board per target"
    )
    init.add_argument(
        "--path",
        type=Path,
        default=DEFAULT_INVENTORY,
        help=f"the file (default {DEFAULT_INVENTORY})",
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.set_defaults(run=run_init)

    check = actions.add_parser("check", help="read an inventory and list its boards")
    check.add_argument("path", type=Path, nargs="?", default=DEFAULT_INVENTORY)
    check.add_argument("--json", action="store_true")
    check.set_defaults(run=run_check)


def run_init(args: argparse.Namespace) -> int:
    from npu_hil.harness.farm.starter import builtin_inventory, write_starter_inventory

    written = write_starter_inventory(args.path, force=args.force)
    count = len(builtin_inventory().boards)
    print(f"wrote {written}: {count} simulated boards, one per target; add real boards there")
    return 0


def run_check(args: argparse.Namespace) -> int:
    from npu_hil.harness.farm.inventory import load_inventory

    inventory = load_inventory(args.path)
    rows = [
        {
            "name": b.name,
            "target": b.target,
            "backend": b.backend,
            "transport": b.transport.kind,
            "fallback": b.fallback,
            "runtimes": list(b.runtimes),
        }
        for b in inventory.boards
    ]
    if args.json:
        print_json({"inventory": str(args.path), "boards": rows})
        return 0
    print(f"{args.path}: {len(rows)} boards")
    for row in rows:
        print(
            f"  {row['name']:<16} {row['target']:<9} {row['backend']:<4} "
            f"{row['transport']:<7} fallback={row['fallback']}"
            + (f" runtimes={','.join(row['runtimes'])}" if row["runtimes"] else "")
        )
    if inventory.labgrid is not None:
        print("  (and the places its labgrid section selects, from the coordinator at run time)")
    return 0
