"""SshSession: a long-running remote process on an SSH exec channel (an agent session), its
stderr drained by a thread into a tail."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable

import paramiko

from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.base import SessionExit
from npu_hil.harness.transport.ssh_exit import exit_returncode

__all__ = ["STDERR_TAIL_BYTES", "SshSession", "kill_command"]

STDERR_TAIL_BYTES = 64 * 1024


def kill_command(pid: int) -> str:
    # sshd puts every session in its own session/process group, so the group of the shell we
    # exec'd into holds exactly the command and its children.
    return f"kill -KILL -- -{pid} 2>/dev/null || kill -KILL {pid} 2>/dev/null; true"


class SshSession:
    """A long-running remote process on an exec channel; stderr drained by a thread into a tail.
    ``kill`` kills a process group on the board (over a channel of its own)."""

    def __init__(self, channel: paramiko.Channel, pid: int, kill: Callable[[int], None]) -> None:
        self._kill = kill
        self._channel = channel
        self.pid = pid
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._exit: SessionExit | None = None
        self._drain = threading.Thread(target=self._drain_stderr, daemon=True)
        self._drain.start()

    def _drain_stderr(self) -> None:
        while True:
            try:
                chunk = self._channel.recv_stderr(65536)
            except (OSError, EOFError, paramiko.SSHException):
                return
            if not chunk:
                return
            with self._lock:
                self._tail += chunk
                del self._tail[:-STDERR_TAIL_BYTES]

    def send(self, data: bytes) -> None:
        if self._exit is not None:
            raise TransportError(f"ssh session {self.pid} is closed")
        try:
            self._channel.sendall(data)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise TransportError(f"ssh session {self.pid}: cannot send ({exc})") from exc

    def recv(self, n: int, timeout: float) -> bytes:
        if self._exit is not None:
            return b""
        self._channel.settimeout(max(0.001, timeout))
        try:
            return self._channel.recv(n)
        except TimeoutError:
            raise TransportError(
                f"ssh session {self.pid}: nothing received within {timeout:.1f} s"
            ) from None
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise TransportError(f"ssh session {self.pid}: link lost ({exc})") from exc

    def stderr_tail(self) -> bytes:
        with self._lock:
            return bytes(self._tail)

    def close(self, timeout: float = 5.0) -> SessionExit:
        if self._exit is not None:
            return self._exit
        returncode: int | None = None
        with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
            self._channel.shutdown_write()
        deadline = time.monotonic() + max(0.0, timeout)
        while not self._channel.exit_status_ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        if self._channel.exit_status_ready():
            returncode = exit_returncode(self._channel, self._channel.recv_exit_status())
        else:
            self._kill(self.pid)
            end = time.monotonic() + 2.0
            while not self._channel.exit_status_ready() and time.monotonic() < end:
                time.sleep(0.01)
            if self._channel.exit_status_ready():
                # An exit by signal the board did not name: SIGKILL is what we sent.
                status = self._channel.recv_exit_status()
                returncode = exit_returncode(self._channel, status)
                if returncode is None:
                    returncode = -signal.SIGKILL
        self._drain.join(1.0)
        self._channel.close()
        self._exit = SessionExit(returncode, self.stderr_tail())
        return self._exit
