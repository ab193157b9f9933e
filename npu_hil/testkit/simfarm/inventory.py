"""The inventory a simulated farm writes: every board ``backend: hw`` (reached through a real
transport) with the ``sim`` adapter (the NPU runtime is the simulated one), in the schema of
:mod:`npu_hil.harness.farm.inventory`, which reads it back."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from npu_hil.harness.errors import NpuHilError
from npu_hil.testkit.simfarm.pyenv import harness_root

__all__ = ["checkout_manifest", "write_inventory"]

# PyYAML ships no type information; the project reads it untyped elsewhere too.
yaml: Any = importlib.import_module("yaml")

HEADER = (
    "# Written by `npu-hil simfarm up`: simulated boards behind a real sshd and serial consoles\n"
    "# on 127.0.0.1. Valid while the farm is up; `npu-hil simfarm down` stops it.\n"
)


def checkout_manifest() -> Path | None:
    """The model manifest the checkout's own ``inventory.yaml`` names (absolute), if any: the
    farm's boards then run the same models as the default inventory's."""
    from npu_hil.harness.farm.inventory import load_inventory

    default = harness_root() / "inventory.yaml"
    if not default.is_file():
        return None
    try:
        return load_inventory(default).manifest
    except NpuHilError:
        return None


def write_inventory(
    path: Path, boards: Sequence[Mapping[str, Any]], *, manifest: Path | None = None
) -> Path:
    """Write ``boards`` (inventory board mappings, in order) to ``path``."""
    document: dict[str, Any] = {"defaults": {"fallback": "none"}}
    if manifest is not None:
        document["manifest"] = str(manifest)
    document["boards"] = [dict(board) for board in boards]
    text = yaml.safe_dump(document, sort_keys=False, default_flow_style=None, width=1000)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(HEADER + text, encoding="utf-8")
    temporary.replace(path)
    return path
