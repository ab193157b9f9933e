"""The transport interface: files and processes on a board, every remote path confined to one
working directory by its spelling, every wait bounded (a TransportError, never a hang); and what
the transports share: every setting's default and check, written once (so a setting cannot mean
one thing in the inventory and another in the transport), a process's stderr tail, the board's
OS errors by name, the workdir check."""

from __future__ import annotations

import difflib
import errno as _errno
import json
import logging
import os
import re
import shlex
import stat
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal, Protocol, runtime_checkable

from npu_hil.harness.board.folders import folder_problem
from npu_hil.harness.errors import NpuHilError, TransportError, UnsafeFolderError

HostKeyPolicy = Literal["strict", "accept-new"]
HOST_KEY_POLICIES: tuple[HostKeyPolicy, ...] = ("strict", "accept-new")
"""``strict``: a host key no known_hosts file has is refused; ``accept-new``: it is recorded in
the harness's own known_hosts. A changed key is refused under both."""

SSH_PORT = 22
# The console speed of most boards' debug UARTs (some run at 1500000: an inventory says so).
BAUDRATE = 115200
BAUDRATES = (
    300,
    600,
    1200,
    2400,
    4800,
    9600,
    19200,
    38400,
    57600,
    115200,
    230400,
    460800,
    500000,
    576000,
    921600,
    1000000,
    1152000,
    1500000,
    2000000,
    2500000,
    3000000,
    3500000,
    4000000,
)
"""The rates a serial port (termios) can be set to: what an inventory may name."""

BOARD_PYTHON = "python3"
"""The interpreter the agent runs under on a board whose inventory names none."""
BOARD_WORKDIR = "/tmp/npu-hil"
"""Where the agent, the model cache and the jobs live on a board whose inventory names no
workdir: a tmpfs on most boards, so a reboot leaves nothing behind."""


def check_host_key_policy(value: str) -> HostKeyPolicy:
    """``value`` as a host key policy; ValueError saying what was expected otherwise."""
    if value not in HOST_KEY_POLICIES:
        close = difflib.get_close_matches(str(value), HOST_KEY_POLICIES, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        # Quoted as the inventory's messages quote what came (JSON: escaped, double quotes).
        got = f"got {json.dumps(value)}{hint}"
        raise ValueError(f"host_key_policy: expected one of {', '.join(HOST_KEY_POLICIES)}, {got}")
    return value


class RemotePathError(NpuHilError, ValueError):
    """A remote path that would leave the transport's working directory."""


def remote_path(path: str | PurePosixPath) -> PurePosixPath:
    """Normalise a remote path relative to the working directory; refuse traversal.

    Remote paths are POSIX whatever the host runs, relative, and never contain ``..``: a
    confined path is checked by its spelling, before anything is sent, so SSH and serial transports
    confine the same way without asking the board.
    """
    text = str(path)
    if not text or "\x00" in text or "\\" in text:
        raise RemotePathError(f"remote path {text!r}: expected a relative POSIX path")
    pure = PurePosixPath(text)
    if pure.is_absolute():
        raise RemotePathError(
            f"remote path {text!r} is absolute; remote paths are relative to the workdir"
        )
    if ".." in pure.parts:
        raise RemotePathError(f"remote path {text!r} leaves the transport's working directory")
    if not pure.parts:
        raise RemotePathError(f"remote path {text!r} names the working directory itself")
    return pure


@dataclass(frozen=True)
class CompletedRun:
    """A remote command that finished (whatever its exit status)."""

    returncode: int
    stdout: bytes
    stderr: bytes
    duration: float


@dataclass(frozen=True)
class StreamExit:
    """How a stream's remote process ended: its exit status (negative: killed by that signal;
    None: unknown, e.g. the link went away) and the tail of its stderr."""

    returncode: int | None
    stderr: bytes


@runtime_checkable
class Stream(Protocol):
    """A bidirectional byte stream to a long-running remote process (its stdin and stdout); its
    stderr is collected separately, for the log."""

    def send(self, data: bytes) -> None:
        """Write all of ``data``; TransportError when the stream is closed or lost."""

    def recv(self, n: int, timeout: float) -> bytes:
        """Between 1 and ``n`` bytes as soon as any arrive; ``b""`` once the remote process closed
        its stdout; TransportError when nothing arrived within ``timeout`` seconds."""

    def stderr_tail(self) -> bytes:
        """The last few kilobytes the process wrote to stderr so far."""

    def close(self, timeout: float = 5.0) -> StreamExit:
        """End the remote process (close its stdin, wait up to ``timeout``, then kill it) and say
        how it ended. Idempotent."""


@runtime_checkable
class Transport(Protocol):
    """Files and processes on one board, confined to one working directory there.

    ``python`` is the interpreter the agent runs under on that board.
    """

    @property
    def workdir(self) -> str:
        """The remote working directory (an absolute path on the board)."""

    @property
    def python(self) -> str:
        """The board's Python interpreter (a command or a path)."""

    def put(self, local_path: str | Path, remote_path: str | PurePosixPath) -> None:
        """Copy one local file to the board, creating parent directories. Atomic: the remote path
        holds either its old content or all of the new content, never a partial file."""

    def get(self, remote_path: str | PurePosixPath, local_path: str | Path) -> None:
        """Copy one remote file to this machine; TransportError when it is missing."""

    def exists(self, remote_path: str | PurePosixPath) -> bool:
        """Whether a remote file or directory exists (content-addressed deploys ask this)."""

    def run(
        self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None
    ) -> CompletedRun:
        """Run a command in the working directory and wait for it; TransportError (after killing
        it) when it does not finish within ``timeout`` seconds or the link is lost."""

    def open_stream(self, argv: Sequence[str]) -> Stream:
        """Start a long-running command in the working directory, connected by a Stream."""

    def cleanup(self, remote_path: str | PurePosixPath) -> None:
        """Remove a remote file or directory tree (missing is fine)."""


# A process's stderr, drained by a thread into a bounded tail: a chatty process never blocks on a
# full pipe, and a crash's last lines are kept for the report.

STDERR_TAIL_BYTES = 64 * 1024


class StderrTail:
    """Reads ``read(n)`` on a daemon thread until it returns ``b""`` or raises one of ``lost``
    (the stream ended), keeping the last :data:`STDERR_TAIL_BYTES`; each chunk also goes to
    ``log`` at debug level when one is given."""

    def __init__(
        self,
        read: Callable[[int], bytes],
        lost: tuple[type[BaseException], ...],
        *,
        name: str,
        log: logging.Logger | None = None,
    ) -> None:
        self._read = read
        self._lost = lost
        self._name = name
        self._log = log
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = self._read(65536)
            except self._lost:
                return
            if not chunk:
                return
            if self._log is not None:
                self._log.debug("%s stderr: %s", self._name, chunk.decode(errors="replace"))
            with self._lock:
                self._tail += chunk
                del self._tail[:-STDERR_TAIL_BYTES]

    def tail(self) -> bytes:
        with self._lock:
            return bytes(self._tail)

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the stream's end (what came is kept either way)."""
        self._thread.join(timeout)


# The board's OS errors by name: a full or read-only board disk said as such (``ENOSPC (No space
# left on device)``), from an errno or read back from the C library's message in the board's text,
# so it is never reported as a short transfer or a missing file.

BOARD_ERRNOS: tuple[int, ...] = tuple(
    int(getattr(_errno, name))
    for name in (
        "ENOSPC",
        "EDQUOT",
        "EROFS",
        "EACCES",
        "EPERM",
        "EFBIG",
        "EIO",
        "EMFILE",
        "ENFILE",
        "ENAMETOOLONG",
        "ENOTDIR",
        "ENOENT",
    )
    if hasattr(_errno, name)
)
"""The errors a board's filesystem gives a transfer, most telling first (a missing file is
often only the consequence of one of the others)."""
_BRACKETED = re.compile(r"\[Errno (\d+)\]")


def describe_errno(number: int) -> str:
    """``ENOSPC (No space left on device)``."""
    return f"{_errno.errorcode.get(number, f'errno {number}')} ({os.strerror(number)})"


def errno_in_text(text: str | bytes) -> int | None:
    """The errno a board's error text names: Python's ``[Errno N]``, else the first of
    :data:`BOARD_ERRNOS` whose C library message appears in it; None when none does."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    found = _BRACKETED.search(text)
    if found is not None:
        return int(found.group(1))
    lowered = text.lower()
    for number in BOARD_ERRNOS:
        if os.strerror(number).lower() in lowered:
            return number
    return None


def board_os_error(what: str, number: int, detail: str = "") -> TransportError:
    """A TransportError for an OS error on the board, named and numbered."""
    extra = f" ({detail})" if detail else ""
    return TransportError(f"{what}: {describe_errno(number)} on the board{extra}", errno=number)


# The board workdir, checked before anything is deployed into it (docs/runtime/agent.md): made
# private when missing, refused unless ours alone, by the rule of
# :func:`npu_hil.harness.board.folders.folder_problem`.

_KINDS = {
    "d": stat.S_IFDIR,
    "l": stat.S_IFLNK,
    "-": stat.S_IFREG,
    "p": stat.S_IFIFO,
    "s": stat.S_IFSOCK,
    "c": stat.S_IFCHR,
    "b": stat.S_IFBLK,
}
_BITS = (0o400, 0o200, 0o100, 0o040, 0o020, 0o010, 0o004, 0o002, 0o001)


def workdir_probe(workdir: str) -> str:
    """The shell command: make the workdir (0700, parents as the umask says) when missing, then
    print our uid and the workdir's own ``ls -ldn`` line (a symlink shown as one)."""
    quoted = shlex.quote(workdir)
    return f"mkdir -p -m 700 -- {quoted} 2>/dev/null; id -u && ls -ldn -- {quoted}"


def mode_from_ls(field: str) -> int:
    """The ``st_mode`` an ``ls -l`` mode field (``drwxrwxrwt``) stands for; ValueError when it
    is not one."""
    if len(field) < 10 or field[0] not in _KINDS:
        raise ValueError(f"{field!r} is not an ls -l mode field")
    mode = _KINDS[field[0]]
    for char, bit in zip(field[1:10], _BITS, strict=True):
        if char in "rwxst":
            mode |= bit
        elif char not in "-ST":
            raise ValueError(f"{field!r} is not an ls -l mode field")
    mode |= stat.S_ISUID if field[3] in "sS" else 0
    mode |= stat.S_ISGID if field[6] in "sS" else 0
    mode |= stat.S_ISVTX if field[9] in "tT" else 0
    return mode


def check_workdir_probe(workdir: str, output: bytes, where: str) -> None:
    """Judge what :func:`workdir_probe` printed: UnsafeFolderError naming owner and mode when
    the workdir is not ours alone, TransportError when the answer cannot be read."""
    lines = [line for line in output.decode("utf-8", "replace").splitlines() if line.strip()]
    try:
        euid = int(lines[-2].strip())
        fields = lines[-1].split()
        mode, owner = mode_from_ls(fields[0]), int(fields[2])
    except (IndexError, ValueError):
        raise TransportError(
            f"{where}: cannot tell who owns the workdir {workdir} (the board answered "
            f"{output[-300:]!r})"
        ) from None
    problem = folder_problem(workdir, mode, owner, euid)
    if problem is not None:
        raise UnsafeFolderError(f"{where}: board workdir {problem}")
