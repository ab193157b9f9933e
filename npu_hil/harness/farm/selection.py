"""The command line's board selection (``--target``, ``--board``, ``--runtime``) checked against
an inventory: a value no board has is a usage error naming the values it does have, not a run
that skips every case "for want of a board" and stays green."""

from __future__ import annotations

from collections.abc import Iterable

from npu_hil.harness.farm.inventory import Inventory
from npu_hil.targets.registry import VENDOR_OF


def _listed(values: Iterable[str]) -> str:
    return ", ".join(dict.fromkeys(values)) or "none"


def selection_problem(
    inventory: Inventory, targets: Iterable[str], boards: Iterable[str]
) -> str | None:
    """Why ``--target``/``--board`` values do not fit ``inventory`` (the first bad value), or
    None when every value names something the inventory has."""
    where = inventory.source
    have_targets = [b.target for b in inventory.boards]
    for target in targets:
        if target not in VENDOR_OF:
            return (
                f"--target {target!r}: no such target (known: {_listed(VENDOR_OF)}; "
                f"in {where}: {_listed(have_targets)})"
            )
        if target not in have_targets:
            return f"--target {target!r}: no board of that target in {where} (its targets: " + (
                f"{_listed(have_targets)})"
            )
    names = [b.name for b in inventory.boards]
    boards = list(boards)
    for name in boards:
        if name not in names:
            return f"--board {name!r}: no such board in {where} (its boards: {_listed(names)})"
    targets = list(targets)
    if (
        targets
        and boards
        and not any(b.name in boards and b.target in targets for b in inventory.boards)
    ):
        given = " ".join([*(f"--target {t}" for t in targets), *(f"--board {n}" for n in boards)])
        return f"{given}: no board of {where} is both (the two filters select nothing together)"
    return None


def runtime_names(inventory: Inventory) -> list[str]:
    """Every runtime name the inventory's boards list, in first-seen order."""
    return list(dict.fromkeys(name for b in inventory.boards for name in b.runtimes))


def runtime_problem(inventory: Inventory, runtime: str | None) -> str | None:
    """Why ``--runtime`` does not fit ``inventory`` (no board has that runtime), or None."""
    if runtime is None or runtime in runtime_names(inventory):
        return None
    return (
        f"--runtime {runtime!r}: no board of {inventory.source} has that runtime "
        f"(its runtimes: {_listed(runtime_names(inventory))})"
    )
