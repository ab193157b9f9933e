"""The runtime's own log in a job's window: what the process wrote to its standard error, through a
tee child (how, and why so: ``docs/runtime/agent.md``, The board's logs). Standard library only,
Python >= 3.8.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .kernlog import Bounded

if TYPE_CHECKING:
    from .documents import LogJson

MAX_WINDOW_BYTES = 1 << 20  # a job's window kept by the tee, the newest bytes
SYNC_WAIT_S = 5.0
SYNC = b"\0npu-hil-stderr-sync\n"
"""What the agent writes to descriptor 2 to close a window: the tee answers on a pipe of its own
with what was written since the last one, and neither forwards the mark nor keeps it."""
RESET = b"\0npu-hil-stderr-rset\n"
"""What the agent writes to open a window: the tee forgets what it kept, and does not answer, so
opening costs the job no round trip (the same length as SYNC: one partial-mark rule for both)."""

# The tee, started once per agent process by the same interpreter: copies descriptor 0 to 1
# (the agent's own stderr) and keeps what came since the last SYNC in memory (the newest
# argv[3] bytes); at each SYNC it answers on the descriptor argv[2] with "<bytes> <dropped>\n"
# and the bytes, at each RESET it forgets them. Nothing is written to disk: a board's disk may be
# full or read-only. A write to 1 that fails (the host went away) does not stop the copy.
_TEE = """
import os, sys
ack, limit = int(sys.argv[1]), int(sys.argv[2])
mark, reset = b"\\0npu-hil-stderr-sync\\n", b"\\0npu-hil-stderr-rset\\n"
window, dropped, pending = b"", 0, b""
def emit(data):
    global window, dropped
    if not data:
        return
    try:
        os.write(1, data)
    except OSError:
        pass
    window += data
    if len(window) > limit:
        dropped += len(window) - limit
        window = window[-limit:]
def answer():
    global window, dropped
    out = b"%d %d\\n" % (len(window), dropped) + window
    while out:
        out = out[os.write(ack, out):]
    window, dropped = b"", 0
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        emit(pending)
        break
    pending += chunk
    while True:
        hits = [a for a in (pending.find(mark), pending.find(reset)) if a >= 0]
        if not hits:
            break
        at = min(hits)
        emit(pending[:at])
        if pending.startswith(mark, at):
            answer()
        else:
            window, dropped = b"", 0
        pending = pending[at + len(mark):]
    cut = pending.rfind(b"\\0")
    if cut < 0 or len(pending) - cut >= len(mark):
        cut = len(pending)
    emit(pending[:cut])
    pending = pending[cut:]
"""


class StderrTee:
    """Descriptor 2 of the agent pointed, once per process, at a tee child, which keeps what came
    since the last :meth:`reset` or :meth:`window` call. A child, so what a runtime wrote just
    before it crashed the agent still gets out: it reads to the end of the pipe after its parent
    is gone."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.ack: int | None = None
        self.saved: int | None = None
        self.why = ""

    def ensure(self) -> bool:
        """The tee running (started on first use); False with ``why`` if it cannot be."""
        if self.proc is not None and self.proc.poll() is None and self.ack is not None:
            return True
        if self.why:
            return False
        ack_r = ack_w = -1
        try:
            ack_r, ack_w = os.pipe()
            argv = [sys.executable, "-S", "-c", _TEE, str(ack_w), str(MAX_WINDOW_BYTES)]
            with _flushed():
                # The tee's stdout is the agent's stderr: what it copies goes where it went.
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=2,
                    stderr=subprocess.DEVNULL,
                    pass_fds=(ack_w,),
                )
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
        self.proc, self.ack = proc, ack_r
        return True

    def window(self) -> tuple[bytes, int] | None:
        """What descriptor 2 got since the last call (the newest bytes) and how many were
        dropped; None (and ``why``) when the tee does not answer."""
        if self.ack is None:
            return None
        _flush()
        try:
            os.write(2, SYNC)
            line, data = _read_line(self.ack, SYNC_WAIT_S)
            head = line.split()
            size, dropped = int(head[0]), int(head[1])
            while len(data) < size:
                ready, _, _ = select.select([self.ack], [], [], SYNC_WAIT_S)
                chunk = os.read(self.ack, size - len(data)) if ready else b""
                if not chunk:
                    raise OSError("the runtime's log tee stopped answering")
                data += chunk
            return data, dropped
        except (OSError, ValueError, IndexError):
            self.why = f"the runtime's log tee did not answer within {SYNC_WAIT_S:g} s"
            self.ack = None
            return None

    def reset(self) -> bool:
        """Open a window: the tee forgets what came before (no answer to wait for). False
        (and ``why``) when the tee is not there."""
        if self.ack is None:
            return False
        _flush()
        try:
            os.write(2, RESET)
        except OSError as exc:
            self.why = f"the runtime's log tee cannot be reached: {exc}"
            return False
        return True


def _read_line(fd: int, timeout: float) -> tuple[bytes, bytes]:
    """A line from ``fd`` and what came after it in the same reads (the tee writes its answer's
    header and bytes at once, so one read usually holds both)."""
    got = b""
    while b"\n" not in got:
        ready, _, _ = select.select([fd], [], [], timeout)
        chunk = os.read(fd, 65536) if ready else b""
        if not chunk:
            raise OSError("the runtime's log tee ended")
        got += chunk
    line, rest = got.split(b"\n", 1)
    return line, rest


_TEE_OF_PROCESS = StderrTee()


class StderrCapture:
    """The runtime's standard error in one job's window, through the process's tee."""

    def __init__(self, tee: StderrTee | None = None) -> None:
        self.tee = tee if tee is not None else _TEE_OF_PROCESS
        self.open = False
        self.why = ""

    def start(self) -> None:
        if not self.tee.ensure():
            self.why = self.tee.why
            return
        # What came before the job (the agent's own lines between jobs) is not the job's.
        self.open = self.tee.reset()
        if not self.open:
            self.why = self.tee.why

    def stop(self, level: int | None, env: str | None) -> LogJson:
        got = self.tee.window() if self.open else None
        if got is None:
            why = self.why or self.tee.why or "not captured"
            return {"level": level, "env": env, "source": "absent", "why": why, "lines": []}
        raw, dropped = got
        kept = Bounded()
        for line in raw.decode("utf-8", "replace").splitlines():
            if line.strip():
                kept.add(line.rstrip())
        out: LogJson = {"level": level, "env": env, "source": "stderr", "lines": kept.lines}
        if kept.dropped or dropped:
            out["dropped"] = kept.dropped + (1 if dropped else 0)
        return out


@contextlib.contextmanager
def _flushed() -> Iterator[None]:
    """Python's own buffered stderr written out before the descriptor changes hands."""
    _flush()
    yield
    _flush()


def _flush() -> None:
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stderr.flush()


def set_log_level(env: str | None, level: int | None) -> None:
    """Write the job's level where the adapter's runtime reads it (nothing without both)."""
    if env and level is not None:
        os.environ[env] = str(level)
