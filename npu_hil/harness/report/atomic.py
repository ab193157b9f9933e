"""Atomic file writes: a reader sees the old file or the new one. Files get the umask's mode, as
any tool's (``tempfile.mkstemp``'s 0600 would hide the reports from a CI server or a colleague);
the run folder is what is private (:mod:`npu_hil.harness.report.runs`)."""

from __future__ import annotations

import math
import os
import secrets
import time
from collections.abc import Iterable
from pathlib import Path

# The umask applies: 0o666 & ~umask, as open(2) and the shell give a new file.
FILE_MODE = 0o666
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


def _create_temp(path: Path) -> tuple[int, Path]:
    """A new file beside ``path``, never an existing one nor through a link (O_EXCL)."""
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, _NEW_FILE, FILE_MODE), tmp
        except FileExistsError:  # the same random name: draw again
            continue


def write_chunks_atomic(path: Path, chunks: Iterable[bytes]) -> None:
    """Write the chunks to a temporary file beside ``path`` (never all held at once: a
    12,000-case JUnit file is 40 MB), fsync it, then ``os.replace`` it."""
    fd, tmp = _create_temp(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    # The writers hand clean text (npu_hil.harness.report.sanitize); "replace" is the last guard, so
    # a character that slipped through costs one "?" rather than the whole file.
    write_chunks_atomic(path, (text.encode("utf-8", errors="replace"),))


SYNC_INTERVAL_S = 1.0
"""An appended line is forced to disk at most this often per file (and by :func:`sync_file` at
the end). A process that dies loses nothing either way (its lines are the kernel's once
written); only a power cut or a kernel crash can lose the last second. An fsync per line cost
4 ms a case on a plain disk: 48 s of a 12,000-case run."""
_last_sync: dict[Path, float] = {}


def append_line(path: Path, line: str) -> None:
    """Append one line with a single ``write`` on an ``O_APPEND`` descriptor (the lines of
    several xdist workers stay whole), fsynced when the last fsync is older than
    :data:`SYNC_INTERVAL_S`."""
    data = (line.rstrip("\n") + "\n").encode("utf-8", errors="replace")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, FILE_MODE)
    try:
        os.write(fd, data)
        now = time.monotonic()
        if now - _last_sync.get(path, -math.inf) >= SYNC_INTERVAL_S:
            os.fsync(fd)
            _last_sync[path] = now
    finally:
        os.close(fd)


def sync_file(path: Path) -> None:
    """Force ``path`` (appended to by :func:`append_line`) to disk, if it exists."""
    _last_sync.pop(path, None)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
