"""What SoC the board says it is: the device tree's root ``compatible`` and ``model``, read as
:mod:`boardstate` reads (``docs/runtime/agent.md``, The result document). Standard library only,
Python >= 3.8.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .boardstate import sysfs_root

if TYPE_CHECKING:
    from .documents import IdentityJson

COMPATIBLE = "proc/device-tree/compatible"
MODEL = "proc/device-tree/model"
MAX_FILE_BYTES = 4096
MAX_STRINGS = 32
MAX_STRING_CHARS = 128


def _read(root: str, rel: str) -> tuple[bytes | None, str | None]:
    """(the file's first bytes, None), (None, None) when absent, (None, error) when unreadable."""
    try:
        with open(os.path.join(root, rel), "rb") as handle:
            return handle.read(MAX_FILE_BYTES), None
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, str(exc)


def _strings(raw: bytes) -> list[str]:
    parts = [p.decode("utf-8", "replace")[:MAX_STRING_CHARS] for p in raw.split(b"\0")]
    return [p.strip() for p in parts if p.strip()][:MAX_STRINGS]


def read_identity(root: str | None = None) -> IdentityJson:
    """``source`` (the path as on the board), ``compatible`` (the strings, board first, SoC
    last; empty when absent), ``model`` (or None), ``absent`` (no such file) and ``error`` (why
    it could not be read, or None)."""
    base = root if root is not None else sysfs_root()
    raw, error = _read(base, COMPATIBLE)
    model_raw, _ = _read(base, MODEL)
    model = _strings(model_raw)[0] if model_raw else None
    return {
        "source": "/" + COMPATIBLE,
        "compatible": _strings(raw) if raw is not None else [],
        "model": model,
        "absent": raw is None and error is None,
        "error": error,
    }
