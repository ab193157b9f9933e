"""The board's logs around a job (``docs/runtime/agent.md``, The board's logs): the kernel's, a
mark before it and the lines the kernel logged since after it (``/dev/kmsg``, else ``dmesg``,
bounded), and the runtime's own, what the process wrote to its standard error in the job's window,
through a tee child. Standard library only, Python >= 3.8.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import select
import subprocess
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypedDict

from .boardstate import sysfs_root

if TYPE_CHECKING:
    from .documents import LogJson

KMSG_ENV = "NPU_HIL_KMSG"
DMESG_ENV = "NPU_HIL_DMESG"
REAL_KMSG = "/dev/kmsg"
MAX_LINES = 200
MAX_LINE_CHARS = 512
MAX_BYTES = 32 * 1024
READ_SIZE = 16 * 1024  # a kmsg record is at most a few KiB with its dictionary
MAX_READS = 100000  # a log that never runs dry (a flood) still ends the delta
MAX_DMESG_BYTES = 4 << 20
DMESG_TIMEOUT_S = 10.0
RECORD_RE = re.compile(r"(\d+),(\d+),(\d+),([^;,]*)[^;]*;(.*)\Z", re.DOTALL)


def kmsg_path() -> str:
    """The kernel log this agent reads: ``$NPU_HIL_KMSG``, else ``/dev/kmsg`` under the root."""
    given = os.environ.get(KMSG_ENV)
    if given:
        return given
    return os.path.join(sysfs_root(), REAL_KMSG.lstrip("/"))


class KmsgRecord(TypedDict):
    """One record of /dev/kmsg."""

    level: int
    facility: int
    seq: int
    usec: int
    message: str


def parse_record(text: str) -> KmsgRecord | None:
    """One kmsg record (``pri,seq,usec,flags;message``) as {level, facility, seq, usec,
    message}; continuation lines (a leading space) and anything else: None."""
    match = RECORD_RE.match(text.rstrip("\n"))
    if match is None:
        return None
    pri = int(match.group(1))
    # Non-printable bytes come escaped as \xNN; the message is the first line of the record.
    message = match.group(5).split("\n", 1)[0]
    return {
        "level": pri & 7,
        "facility": pri >> 3,
        "seq": int(match.group(2)),
        "usec": int(match.group(3)),
        "message": message,
    }


def format_line(record: KmsgRecord) -> str:
    """A record as ``dmesg`` shows it: ``[seconds.micros] message``."""
    usec = int(record["usec"])
    return f"[{usec // 1000000:5d}.{usec % 1000000:06d}] {record['message']}"


class Bounded:
    """Lines kept newest-first within the caps; ``dropped`` counts what fell out."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.size = 0
        self.dropped = 0

    def add(self, line: str) -> None:
        if len(line) > MAX_LINE_CHARS:
            line = line[: MAX_LINE_CHARS - 3] + "..."
        self.lines.append(line)
        self.size += len(line.encode("utf-8", "replace")) + 1
        while self.lines and (len(self.lines) > MAX_LINES or self.size > MAX_BYTES):
            old = self.lines.pop(0)
            self.size -= len(old.encode("utf-8", "replace")) + 1
            self.dropped += 1


class KernelLog:
    """``mark()`` before a job, ``delta()`` after it (a dict for result.json's ``board_log``)."""

    def __init__(
        self, path: str | None = None, read: Callable[[int, int], bytes] = os.read
    ) -> None:
        self.path = path or kmsg_path()
        self._read = read
        self.fd: int | None = None
        self.why = ""
        self.dmesg_tail: list[str] | None = None

    def mark(self) -> None:
        simulated = bool(os.environ.get(KMSG_ENV))
        if simulated and not os.path.exists(self.path):
            try:
                os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
                open(self.path, "ab").close()
            except OSError as exc:
                self.why = f"cannot create the simulated kernel log {self.path}: {exc}"
                return
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            self.why = f"{self.path}: {exc.strerror or exc}"
            if os.path.realpath(self.path) == REAL_KMSG or os.environ.get(DMESG_ENV):
                self._mark_dmesg()
            return
        try:
            os.lseek(fd, 0, os.SEEK_END)
        except OSError as exc:
            os.close(fd)
            self.why = f"{self.path}: cannot seek to its end: {exc}"
            return
        self.fd = fd

    def _mark_dmesg(self) -> None:
        try:
            self.dmesg_tail = _lines(_run_dmesg())
        except (OSError, subprocess.SubprocessError) as exc:
            self.why += f"; dmesg: {exc}"

    def delta(self) -> LogJson:
        if self.fd is not None:
            try:
                return self._kmsg_delta(self.fd)
            finally:
                os.close(self.fd)
                self.fd = None
        if self.dmesg_tail is not None:
            return self._dmesg_delta(self.dmesg_tail)
        return {"source": "absent", "why": self.why or "no kernel log was marked", "lines": []}

    def _kmsg_delta(self, fd: int) -> LogJson:
        kept = Bounded()
        lost = 0
        last_seq: int | None = None
        pending = ""
        for _ in range(MAX_READS):
            try:
                chunk = self._read(fd, READ_SIZE)
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    # Overwritten before it was read; the next read returns the oldest left.
                    lost += 1
                    continue
                if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                    break
                return _result("kmsg", kept, lost, f"read {self.path}: {exc}")
            if not chunk:
                break  # a regular file in the kmsg format: its end
            # /dev/kmsg gives one record per read; a file gives any run of bytes.
            pending += chunk.decode("utf-8", "replace")
            records, pending = _split_records(pending)
            for text in records:
                record = parse_record(text)
                if record is None:
                    continue
                if last_seq is not None and record["seq"] > last_seq + 1:
                    lost += record["seq"] - last_seq - 1
                last_seq = record["seq"]
                kept.add(format_line(record))
        if pending.strip():
            record = parse_record(pending)
            if record is not None:
                kept.add(format_line(record))
        return _result("kmsg", kept, lost, "")

    def _dmesg_delta(self, before: list[str]) -> LogJson:
        try:
            after = _lines(_run_dmesg())
        except (OSError, subprocess.SubprocessError) as exc:
            return {"source": "absent", "why": f"{self.why}; dmesg: {exc}", "lines": []}
        kept = Bounded()
        for line in _after(before, after):
            kept.add(line)
        return _result("dmesg", kept, 0, "")


def _split_records(text: str) -> tuple[list[str], str]:
    """The whole record lines of ``text`` (continuation lines, which start with a space, are
    the record's dictionary, not its message) and the unfinished rest."""
    *whole, rest = text.split("\n")
    return [line for line in whole if line and not line.startswith(" ")], rest


def _after(before: list[str], after: list[str]) -> list[str]:
    """The lines of ``after`` past the last line of ``before`` (the whole of ``after`` when that
    line is gone: the ring buffer wrapped past it)."""
    if not before:
        return after
    anchor = before[-1]
    for index in range(len(after) - 1, -1, -1):
        if after[index] == anchor:
            return after[index + 1 :]
    return after


def _lines(raw: bytes) -> list[str]:
    return [line for line in raw.decode("utf-8", "replace").splitlines() if line.strip()]


def _run_dmesg() -> bytes:
    done = subprocess.run(
        [os.environ.get(DMESG_ENV) or "dmesg"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=DMESG_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()[:200]
        raise OSError(f"exit status {done.returncode}: {message}")
    return done.stdout[-MAX_DMESG_BYTES:]


def _result(source: str, kept: Bounded, lost: int, why: str) -> LogJson:
    out: LogJson = {"source": source, "lines": kept.lines}
    if kept.dropped:
        out["dropped"] = kept.dropped
    if lost:
        out["lost"] = lost
    if why:
        out["why"] = why
    return out


# The runtime's standard error in a job's window, through a tee child.

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
            # Python's own buffered stderr written out before the descriptor changes hands.
            _flush()
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
            _flush()
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
            # The answer: a line "<bytes> <dropped>", then the bytes.
            data, size, dropped = b"", -1, 0
            while size < 0 or len(data) < size:
                ready, _, _ = select.select([self.ack], [], [], SYNC_WAIT_S)
                chunk = os.read(self.ack, 65536) if ready else b""
                if not chunk:
                    raise OSError("the runtime's log tee stopped answering")
                data += chunk
                if size < 0 and b"\n" in data:
                    line, data = data.split(b"\n", 1)
                    head = line.split()
                    size, dropped = int(head[0]), int(head[1])
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


def _flush() -> None:
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stderr.flush()


def set_log_level(env: str | None, level: int | None) -> None:
    """Write the job's level where the adapter's runtime reads it (nothing without both)."""
    if env and level is not None:
        os.environ[env] = str(level)
