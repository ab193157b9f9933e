"""The runtime's own log in a job's window: what the process wrote to its standard error.

Vendor runtimes are C libraries that log to file descriptor 2 (``E RKNN: ...``, ``[HBRT] ...``),
not through Python, so the capture is of the descriptor: from the first job on it points at a
tee child (one per agent process) that copies everything on to the agent's own stderr, as
before, and into ``runtime-<pid>.log`` in the agent's folder (removed when the agent ends). A
job's window is read back from that file between two syncs, bounded like the kernel log, so a
job pays two pipe round trips (about 0.2 ms), not a process. The agent's own log lines written
in the window land there too; they are the job's as well.

The level is the runtime's own: an adapter names the environment variable its runtime reads
(``Adapter.log_level_env``) and the job's ``runtime_log_level`` is written there before the
adapter is created, as the runtime reads it when it initialises. The value is the runtime's own
scale, passed through unchanged.

Standard library only, Python >= 3.8.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
from typing import Any

from .kernlog import MAX_BYTES, Bounded

MAX_READ_BYTES = 1 << 20  # the tail of a job's window read back, whatever the runtime wrote
MAX_LOG_BYTES = 8 << 20  # the session's log starts over past this (a soak runs for hours)
SYNC_WAIT_S = 5.0
SYNC = b"\0npu-hil-stderr-sync\n"
"""What the agent writes to descriptor 2 to learn how far the tee has written: the tee answers
with its file's size on a pipe of its own, and neither forwards the mark nor keeps it."""

# The tee, started once per agent process by the same interpreter: copies descriptor 0 to 1
# (the agent's own stderr) and to the log file, answers each SYNC with the file's size on the
# descriptor argv[2], and starts the file over past MAX_LOG_BYTES. A write to 1 that fails
# (the host went away) does not stop the copy to the file.
_TEE = """
import os, sys
out = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
ack, limit, mark = int(sys.argv[2]), int(sys.argv[3]), b"\\0npu-hil-stderr-sync\\n"
size, pending = 0, b""
def emit(data):
    global size
    if not data:
        return
    try:
        os.write(1, data)
    except OSError:
        pass
    if size > limit:
        os.ftruncate(out, 0)
        size = 0
    os.write(out, data)
    size += len(data)
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        emit(pending)
        os.unlink(sys.argv[1])  # the agent is gone: its window reads are over
        break
    pending += chunk
    while True:
        at = pending.find(mark)
        if at < 0:
            break
        emit(pending[:at])
        os.write(ack, b"%d\\n" % size)
        pending = pending[at + len(mark):]
    cut = pending.rfind(b"\\0")
    if cut < 0 or len(pending) - cut >= len(mark):
        cut = len(pending)
    emit(pending[:cut])
    pending = pending[cut:]
"""


class StderrTee:
    """Descriptor 2 of the agent pointed, once per process, at a tee child: every byte still
    reaches the agent's own standard error (where the host reads why an agent died) and is kept
    in ``<folder>/runtime-<pid>.log``. A job's window is the stretch of that file between two syncs
    (:meth:`offset`), so a job pays two pipe round trips, not a process. The tee is a child, so
    what a runtime wrote just before it crashed the agent still gets out: the child reads to the
    end of the pipe after its parent is gone."""

    def __init__(self) -> None:
        self.path = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self.ack: int | None = None
        self.saved: int | None = None
        self.why = ""

    def ensure(self, folder: str) -> bool:
        """The tee running (started on first use, into ``folder``); False with ``why`` if not."""
        if self.proc is not None and self.proc.poll() is None:
            return True
        if self.why:
            return False
        if not os.path.isdir(folder):
            self.why = "no folder to write the runtime's log to"
            return False
        ack_r = ack_w = -1
        try:
            ack_r, ack_w = os.pipe()
            # One file per agent process: two agents of one board share the job folders' parent.
            path = os.path.join(folder, f"runtime-{os.getpid()}.log")
            argv = [sys.executable, "-S", "-c", _TEE, path, str(ack_w), str(MAX_LOG_BYTES)]
            with _flushed():
                # The tee's stdout is the agent's stderr: what it copies goes where it went.
                proc = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=2, stderr=subprocess.DEVNULL,
                    pass_fds=(ack_w,),
                )  # fmt: skip
                assert proc.stdin is not None
                self.saved = os.dup(2)
                os.dup2(proc.stdin.fileno(), 2)
                proc.stdin.close()  # descriptor 2 is now the pipe's only writer here
        except (OSError, ValueError) as exc:
            self.why = f"cannot capture the runtime's standard error: {exc}"
            for fd in (ack_r, ack_w):
                if fd >= 0:
                    os.close(fd)
            return False
        os.close(ack_w)
        self.proc, self.ack, self.path = proc, ack_r, path
        return True

    def offset(self) -> int | None:
        """How far the tee has written, once everything written to descriptor 2 so far is in
        the file; None (and ``why``) when it does not answer."""
        if self.ack is None:
            return None
        _flush()
        try:
            os.write(2, SYNC)
            ready, _, _ = select.select([self.ack], [], [], SYNC_WAIT_S)
            line = _read_line(self.ack) if ready else b""
            return int(line)
        except (OSError, ValueError):
            self.why = f"the runtime's log tee did not answer within {SYNC_WAIT_S:g} s"
            self.ack = None
            return None


    def close(self) -> None:
        """Descriptor 2 put back and the tee ended (the agent never needs it: the tee ends with
        the process; a test does)."""
        if self.saved is not None:
            with _flushed():
                os.dup2(self.saved, 2)
            os.close(self.saved)
            self.saved = None
        if self.ack is not None:
            os.close(self.ack)
            self.ack = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=SYNC_WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


def _read_line(fd: int) -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            raise OSError("the runtime's log tee ended")
        line += byte
    return line


_TEE_OF_PROCESS = StderrTee()


class StderrCapture:
    """The runtime's standard error in one job's window, through the process's tee."""

    def __init__(
        self, job_dir: str, tee: StderrTee | None = None, folder: str | None = None
    ) -> None:
        # The tee's file: in the agent's own folder, else beside the job folders.
        self.folder = folder or (os.path.dirname(os.path.abspath(job_dir)) if job_dir else "")
        self.job_dir = job_dir
        self.tee = tee if tee is not None else _TEE_OF_PROCESS
        self.begin: int | None = None
        self.why = ""

    def start(self) -> None:
        if not os.path.isdir(self.job_dir):
            self.why = "no job directory to write the runtime's log to"
            return
        if not self.tee.ensure(self.folder):
            self.why = self.tee.why
            return
        self.begin = self.tee.offset()
        if self.begin is None:
            self.why = self.tee.why

    def stop(self, level: int | None, env: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"level": level, "env": env}
        end = self.tee.offset() if self.begin is not None else None
        if end is None or self.begin is None:
            out.update(source="absent", why=self.why or self.tee.why or "not captured", lines=[])
            return out
        begin = self.begin if self.begin <= end else 0  # the file started over in between
        kept = Bounded(max_bytes=MAX_BYTES)
        try:
            with open(self.tee.path, "rb") as handle:
                handle.seek(max(begin, end - MAX_READ_BYTES))
                raw = handle.read(end - max(begin, end - MAX_READ_BYTES))
        except OSError as exc:
            out.update(source="absent", why=f"cannot read {self.tee.path}: {exc}", lines=[])
            return out
        for line in raw.decode("utf-8", "replace").splitlines():
            if line.strip():
                kept.add(line.rstrip())
        out.update(source="stderr", lines=kept.lines)
        if kept.dropped or end - begin > MAX_READ_BYTES:
            out["dropped"] = kept.dropped + (1 if end - begin > MAX_READ_BYTES else 0)
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
