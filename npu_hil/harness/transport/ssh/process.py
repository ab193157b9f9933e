"""Remote processes over SSH: how a command ended (a signal included), and a long-running
process on an exec channel (a resident agent's stream), its stderr drained into a tail."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable
from typing import Any

import paramiko
from paramiko.common import MSG_CHANNEL_REQUEST

from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.base import StderrTail, StreamExit

__all__ = ["SshStream", "collect_until_exit", "exit_returncode", "record_exit_signals"]


# OpenSSH reports a command killed by a signal with an ``exit-signal`` channel request (RFC 4254
# 6.10: the signal's name without ``SIG``, ...) instead of an ``exit-status``; paramiko ignores it
# and leaves the status at -1 ("killed by SIGHUP" whatever the signal was), so it is recorded here.

EXIT_QUIET_S = 0.5
"""After a command's exit status, how long its output may stay silent without an EOF before the
rest is no longer waited for (a background child holding the pipe open)."""

_ATTR = "npu_hil_exit_signal"


def record_exit_signals(transport: paramiko.Transport) -> None:
    """Make ``transport`` note every ``exit-signal`` its channels receive (the rest of each
    channel request is paramiko's as before). paramiko looks its message handlers up on the
    transport object, so this touches this connection only."""
    # paramiko's private handler table and request handler: its stubs do not declare them.
    table: dict[int, Any] = dict(type(transport)._channel_handler_table)  # type: ignore[attr-defined]
    table[MSG_CHANNEL_REQUEST] = _handle_request
    transport._channel_handler_table = table  # type: ignore[attr-defined]


def _handle_request(channel: paramiko.Channel, message: paramiko.Message) -> None:
    start = message.packet.tell()
    with contextlib.suppress(Exception):  # a malformed request stays paramiko's to refuse
        if message.get_text() == "exit-signal":
            message.get_boolean()  # want reply: always false for exit-signal
            setattr(channel, _ATTR, message.get_text())
    message.packet.seek(start)
    paramiko.Channel._handle_request(channel, message)  # type: ignore[attr-defined]


def exit_returncode(channel: paramiko.Channel, status: int) -> int | None:
    """A channel's end as a Popen-style return code: its exit status, minus the number (on this
    host) of the signal that killed it, None when the board said neither (the link went away)."""
    if status != -1:
        return status
    name = getattr(channel, _ATTR, None)
    if not isinstance(name, str) or not name:
        return None
    try:
        return -int(signal.Signals[name if name.startswith("SIG") else f"SIG{name}"])
    except KeyError:
        return None


def collect_until_exit(
    channel: paramiko.Channel, stdout: bytearray, stderr: bytearray, deadline: float, name: str
) -> bool:
    """Read the command's output into ``stdout`` and ``stderr`` until it has exited and said
    all (True), or until ``deadline`` (False: the caller kills it). Polled, so a command that
    keeps its pipes open past the deadline is still caught; a link lost first is a
    TransportError naming the command."""
    channel.setblocking(False)
    heard = time.monotonic()  # output or the exit status, whichever came last
    exited = False
    while True:
        busy = False
        while channel.recv_ready():
            stdout += channel.recv(65536)
            busy = True
        while channel.recv_stderr_ready():
            stderr += channel.recv_stderr(65536)
            busy = True
        if busy or (channel.exit_status_ready() and not exited):
            heard = time.monotonic()
            exited = channel.exit_status_ready()
        # sshd may send the exit status before the last of the output (RFC 4254 orders
        # neither), so the end is the EOF after it; a background child that keeps the pipe open
        # gets a moment of silence instead.
        ended = channel.eof_received or channel.closed
        quiet = time.monotonic() - heard > EXIT_QUIET_S
        drained = not channel.recv_ready() and not channel.recv_stderr_ready()
        if exited and (ended or quiet) and drained:
            return True
        transport = channel.get_transport()
        if channel.closed or transport is None or not transport.is_active():
            raise TransportError(f"{name!r}: link lost while it ran")
        if time.monotonic() > deadline:
            return False
        if not busy:
            time.sleep(0.002)


class SshStream:
    """A long-running remote process on an exec channel; stderr drained by a thread into a tail.
    ``kill`` kills a process group on the board (over a channel of its own)."""

    def __init__(self, channel: paramiko.Channel, pid: int, kill: Callable[[int], None]) -> None:
        self._kill = kill
        self._channel = channel
        self.pid = pid
        self._exit: StreamExit | None = None
        self._stderr = StderrTail(
            channel.recv_stderr, (OSError, EOFError, paramiko.SSHException), name=f"ssh {pid}"
        )

    def send(self, data: bytes) -> None:
        if self._exit is not None:
            raise TransportError(f"ssh stream {self.pid} is closed")
        try:
            self._channel.sendall(data)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise TransportError(f"ssh stream {self.pid}: cannot send ({exc})") from exc

    def recv(self, n: int, timeout: float) -> bytes:
        if self._exit is not None:
            return b""
        self._channel.settimeout(max(0.001, timeout))
        try:
            return self._channel.recv(n)
        except TimeoutError:
            raise TransportError(
                f"ssh stream {self.pid}: nothing received within {timeout:.1f} s"
            ) from None
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise TransportError(f"ssh stream {self.pid}: link lost ({exc})") from exc

    def stderr_tail(self) -> bytes:
        return self._stderr.tail()

    def close(self, timeout: float = 5.0) -> StreamExit:
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
        self._stderr.join(1.0)
        self._channel.close()
        self._exit = StreamExit(returncode, self.stderr_tail())
        return self._exit
