"""Damage planted where a file the harness reads should be: each kind a reader must refuse at
once, with a typed error naming the path, never a hang, an exception or a huge read."""

from __future__ import annotations

import os
from pathlib import Path

KINDS = ("deep", "fifo", "dev-zero", "folder", "nan", "huge-number", "huge", "not-utf8")


def plant(path: Path, how: str) -> None:
    """Put damage of kind ``how`` (one of KINDS) at ``path``, replacing a file there."""
    path.unlink(missing_ok=True)
    if how == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif how == "fifo":
        os.mkfifo(path, 0o600)
    elif how == "dev-zero":
        path.symlink_to("/dev/zero")
    elif how == "folder":
        path.mkdir()
    elif how == "nan":
        path.write_text('{"schema": 1, "run_id": "x", "started": NaN, "cases": [1e400]}')
    elif how == "huge-number":
        path.write_text('{"schema": 1, "state": "bad", "since": 1e400}')
    elif how == "huge":
        with open(path, "wb") as handle:
            handle.truncate(1 << 30)  # sparse: nothing is written
    elif how == "not-utf8":
        path.write_bytes(b"- test: \xff\xfe\n")
    else:
        raise ValueError(f"no damage of kind {how!r} (kinds: {', '.join(KINDS)})")
