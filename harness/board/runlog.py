"""The runtime's own log in a job's window: what the process wrote to its standard error.

Vendor runtimes are C libraries that log to file descriptor 2 (``E RKNN: ...``, ``[HBRT] ...``),
not through Python, so the capture is of the descriptor: for the job it points at a tee into a
file in the job directory (and on to the agent's own stderr, as before), and after the job the
descriptor is put back and the file's newest lines are read, bounded like the kernel log. The
agent's own log lines written in the window land there too; they are the job's as well.

The level is the runtime's own: an adapter names the environment variable its runtime reads
(``Adapter.log_level_env``) and the job's ``runtime_log_level`` is written there before the
adapter is created, as the runtime reads it when it initialises. The value is the runtime's own
scale, passed through unchanged.

Standard library only, Python >= 3.8.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from typing import Any

from .kernlog import MAX_BYTES, Bounded

RUNTIME_LOG_FILE = "runtime.log"
MAX_READ_BYTES = 1 << 20  # the tail of the file read back, whatever the runtime wrote
TEE_WAIT_S = 10.0


# The tee when the board has no tee(1): this interpreter, copying stdin to both.
_PY_TEE = (
    "import os,sys\n"
    "out=os.open(sys.argv[1],os.O_WRONLY|os.O_APPEND)\n"
    "while True:\n"
    " b=os.read(0,65536)\n"
    " if not b: break\n"
    " os.write(2,b); os.write(out,b)\n"
)


class StderrCapture:
    """Points descriptor 2 at a tee between ``start`` and ``stop``: every byte still reaches the
    agent's own standard error (where the host reads why an agent died) and is kept in
    ``<job_dir>/runtime.log``. The tee is a child process, so what a runtime wrote just before it
    crashed the agent still gets out: the child reads to the end of the pipe after its parent is
    gone."""

    def __init__(self, job_dir: str) -> None:
        self.path = os.path.join(job_dir, RUNTIME_LOG_FILE)
        self.saved: int | None = None
        self.tee: subprocess.Popen[bytes] | None = None
        self.why = ""

    def start(self) -> None:
        if not os.path.isdir(os.path.dirname(self.path)):
            self.why = "no job directory to write the runtime's log to"
            return
        try:
            fd = os.open(
                self.path,
                os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o666,
            )
            os.close(fd)
            tee = shutil.which("tee")
            argv = [tee, "-a", self.path] if tee else [sys.executable, "-c", _PY_TEE, self.path]
            with _flushed():
                # The tee's stdout is the agent's stderr: what it copies goes where it went.
                self.tee = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=2, stderr=subprocess.DEVNULL
                )
                assert self.tee.stdin is not None
                self.saved = os.dup(2)
                os.dup2(self.tee.stdin.fileno(), 2)
        except (OSError, ValueError) as exc:
            self.why = f"cannot capture the runtime's standard error: {exc}"
            self._end_tee()

    def _end_tee(self) -> None:
        if self.tee is None:
            return
        with contextlib.suppress(OSError):
            if self.tee.stdin is not None:
                self.tee.stdin.close()
        try:
            self.tee.wait(timeout=TEE_WAIT_S)
        except subprocess.TimeoutExpired:
            self.tee.kill()
            self.tee.wait()
        self.tee = None

    def stop(self, level: int | None, env: str | None) -> dict[str, Any]:
        if self.saved is not None:
            with _flushed():
                os.dup2(self.saved, 2)
                os.close(self.saved)
            self.saved = None
        elif not self.why:
            self.why = "not captured"
        self._end_tee()  # the pipe's last writer is gone: the tee drains it and ends
        out: dict[str, Any] = {"level": level, "env": env}
        if self.why:
            out.update(source="absent", why=self.why, lines=[])
            return out
        kept = Bounded(max_bytes=MAX_BYTES)
        try:
            with open(self.path, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                handle.seek(max(0, size - MAX_READ_BYTES))
                raw = handle.read(MAX_READ_BYTES)
        except OSError as exc:
            out.update(source="absent", why=f"cannot read {self.path}: {exc}", lines=[])
            return out
        for line in raw.decode("utf-8", "replace").splitlines():
            if line.strip():
                kept.add(line.rstrip())
        out.update(source="stderr", lines=kept.lines)
        if kept.dropped or size > MAX_READ_BYTES:
            out["dropped"] = kept.dropped + (1 if size > MAX_READ_BYTES else 0)
        return out


class _flushed:
    """Python's own buffered stderr written out before the descriptor changes hands."""

    def __enter__(self) -> None:
        _flush()

    def __exit__(self, *exc: object) -> None:
        _flush()


def _flush() -> None:
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stderr.flush()


def set_log_level(env: str | None, level: int | None) -> None:
    """Write the job's level where the adapter's runtime reads it (nothing without both)."""
    if env and level is not None:
        os.environ[env] = str(level)
