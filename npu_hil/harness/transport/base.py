"""The transport interface: files and processes on a board, every remote path confined to one
working directory by its spelling, every wait bounded (a TransportError, never a hang)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable

from npu_hil.harness.errors import NpuHilError


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
