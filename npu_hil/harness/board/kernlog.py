"""The kernel log around a job: a mark before it, the lines the kernel logged since after it
(``/dev/kmsg``, else ``dmesg``, bounded: ``docs/runtime/agent.md``, The board's logs). Standard
library only, Python >= 3.8.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
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
