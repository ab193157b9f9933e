"""The starting inventory: one simulated board per target, with the comments a first real board
needs. ``npu-hil inventory init`` writes it, and the plugin uses it unwritten as the built-in
simulated farm when no inventory is given or found (the repository's ``inventory.yaml`` is it)."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.farm.inventory import Inventory, parse_inventory
from npu_hil.targets.registry import VENDOR_OF

BUILTIN_SOURCE = "<built-in simulated farm>"
"""The inventory's ``source`` when it is the built-in one: records and reports name it so."""

_HEADER = """\
# The boards npu-hil knows. This inventory has one simulated board per target (all {count}), so a
# machine with no hardware can run everything. A real board is a few lines, e.g.:
#
#   - name: {example}-01
#     target: {example}
#     backend: hw
#     transport: {{kind: ssh, host: {example}-01.lab, user: root, key_file: ~/.ssh/farm_ed25519}}
#     fallback: sim                # --backend auto may run its tests on a simulated board
#     power: {{command: {{cycle: "pdu-ctl cycle 3"}}}}
#
# No secrets here: SSH keys by key_file, serial passwords by password_env (an environment variable).
defaults:
  backend: sim
  fallback: sim
  transport: local
boards:
"""


class InventoryExistsError(NpuHilError):
    """``inventory init`` would overwrite a file that is already there."""


def starter_inventory_text() -> str:
    """The commented starting inventory, one simulated board per target, vendor by vendor."""
    targets = list(VENDOR_OF)  # the registry's order: each vendor's targets together
    names = [f"{t}-01" for t in targets]  # the first board of its kind
    name_width = max(len(n) for n in names) + 1  # the `name,` column lines up
    target_width = max(len(t) for t in targets) + 1
    lines = [_HEADER.format(count=len(targets), example=targets[0])]
    for target, name in zip(targets, names, strict=True):
        name_cell = f"{name},".ljust(name_width)
        target_cell = f"{target},".ljust(target_width)
        lines.append(
            f"  - {{name: {name_cell} target: {target_cell} tags: [{VENDOR_OF[target]}]}}\n"
        )
    return "".join(lines)


@functools.cache
def builtin_inventory() -> Inventory:
    """The built-in simulated farm: the starting inventory, read without a file (once: the
    header, the farm and ``inventory init`` all ask, and an Inventory is immutable)."""
    return parse_inventory(starter_inventory_text(), source=BUILTIN_SOURCE)


def write_starter_inventory(path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write the starting inventory to ``path``; an existing file is kept unless ``force``."""
    file = Path(path)
    if file.exists() and not force:
        raise InventoryExistsError(
            f"{file}: already exists; pass --force to overwrite it, or --path for another file"
        )
    if file.is_symlink() or (file.exists() and not file.is_file()):
        raise InventoryExistsError(f"{file}: expected a regular file to write, found another kind")
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(starter_inventory_text(), encoding="utf-8")
    return file
