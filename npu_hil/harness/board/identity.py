"""What SoC the board says it is: the device tree's root ``compatible`` and ``model``, read as
:mod:`boardstate` reads (``docs/runtime/agent.md``, The result document). Standard library only,
Python >= 3.8.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .boardstate import SysfsReader, sysfs_root

if TYPE_CHECKING:
    from .documents import IdentityJson

COMPATIBLE = "proc/device-tree/compatible"
MODEL = "proc/device-tree/model"
MAX_STRINGS = 32
MAX_STRING_CHARS = 128


def _strings(raw: str) -> list[str]:
    parts = [p[:MAX_STRING_CHARS] for p in raw.split("\0")]
    return [p.strip() for p in parts if p.strip()][:MAX_STRINGS]


def read_identity(root: str | None = None) -> IdentityJson:
    """``source`` (the path as on the board), ``compatible`` (the strings, board first, SoC
    last; empty when absent), ``model`` (or None), ``absent`` (no such file) and ``error`` (why
    it could not be read, or None)."""
    reader = SysfsReader(root if root is not None else sysfs_root())
    raw = reader.text(COMPATIBLE)
    errors = [u["error"] for u in reader.unreadable]
    models = _strings(reader.text(MODEL) or "")
    return {
        "source": "/" + COMPATIBLE,
        "compatible": _strings(raw) if raw is not None else [],
        "model": models[0] if models else None,
        "absent": raw is None and not errors,
        "error": errors[0] if errors else None,
    }
