"""What a simulated farm writes to reach its boards: the inventory, every board ``backend: hw``
(reached through a real transport) with the ``sim`` adapter (the NPU runtime is the simulated
one), in the schema of :mod:`npu_hil.harness.farm.inventory`, which reads it back; and the boards'
``python``, a wrapper that puts the harness on ``PYTHONPATH`` (the ``sim`` adapter imports it,
and a login over SSH or a serial console starts with a clean environment)."""

from __future__ import annotations

import importlib
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import npu_hil
from npu_hil.harness.errors import NpuHilError

__all__ = ["checkout_manifest", "harness_root", "write_inventory", "write_python_wrapper"]

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


def harness_root() -> Path:
    """The folder that holds the ``npu_hil`` package (a checkout, or site-packages when
    installed)."""
    return Path(npu_hil.__file__).resolve().parents[1]


def write_python_wrapper(
    path: Path, *, python: str | None = None, env: dict[str, str] | None = None
) -> Path:
    """Write an executable ``path`` that runs ``python`` (default: this interpreter) with the
    harness on ``PYTHONPATH``, ahead of whatever the caller's environment adds, and ``env``
    exported (a simulated board's own files, such as its kernel log)."""
    interpreter = python or sys.executable
    root = harness_root()
    path.parent.mkdir(parents=True, exist_ok=True)
    exports = "".join(f"{k}={shlex.quote(v)}\nexport {k}\n" for k, v in sorted((env or {}).items()))
    path.write_text(
        "#!/bin/sh\n"
        "# A simulated board's Python: the sim adapter imports the harness from here.\n"
        f"PYTHONPATH={shlex.quote(str(root))}${{PYTHONPATH:+:$PYTHONPATH}}\n"
        "export PYTHONPATH\n" + exports + f'exec {shlex.quote(interpreter)} "$@"\n',
        encoding="utf-8",
    )
    os.chmod(path, 0o755)
    return path
