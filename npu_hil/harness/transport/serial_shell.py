"""A shell on a serial console, as the serial transport talks to it: the wire (pyserial reads
and writes, counted), the console held for one exchange at a time (an ``flock`` on the device),
login and sync, and one command line run between two markers with its exit status.

:class:`ConsoleShell` is the base of
:class:`~npu_hil.harness.transport.serial_console.SerialTransport`, which opens the port and sets
the attributes declared here; why the protocol is what it is (markers with a nonce, ``NPU_SID``,
recovery by ``^C``, reboots) is said in that module.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import re
import time
import uuid
from collections.abc import Iterator

import serial

from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.oserrors import board_os_error, errno_in_text

__all__ = ["BOOT_LOG_LIMIT", "LOGIN_RE", "PASSWORD_RE", "ConsoleShell", "raise_os_error"]

log = logging.getLogger("npu_hil.harness.transport.serial_console")

LOGIN_RE = re.compile(rb"(?i)login:\s*$")
PASSWORD_RE = re.compile(rb"(?i)password:\s*$")
BOOT_LOG_LIMIT = 256 * 1024


def raise_os_error(what: str, output: bytes) -> None:
    """TransportError naming the errno when the board's shell said one (``cat: write error: No
    space left on device``, ``can't create ...: Read-only file system``)."""
    number = errno_in_text(output)
    if number is not None and number != errno.ENOENT:
        raise board_os_error(what, number, output.strip()[-300:].decode(errors="replace"))


class ConsoleShell:
    """The console's shell: commands run one exchange at a time, in sync after a reboot."""

    url: str
    user: str | None
    password_env: str | None
    command_timeout: float
    connect_timeout: float
    boot_log: str
    bytes_sent: int
    bytes_received: int
    _port: serial.SerialBase
    _buffer: bytearray
    _sid: str
    _lock_fd: int | None
    _held: int

    def _checked(self, command: str, what: str) -> bytes:
        output, status = self._exec(command, self.command_timeout)
        if status != 0:
            raise_os_error(what, output)
            raise TransportError(
                f"{what}: failed on the board (status {status}): "
                f"{output[-500:].decode(errors='replace')}"
            )
        return output

    def _write(self, data: bytes) -> None:
        try:
            self._port.write(data)
            self._port.flush()
        except (serial.SerialException, OSError) as exc:
            raise TransportError(f"serial {self.url}: write failed ({exc})") from exc
        self.bytes_sent += len(data)

    def _read_some(self) -> bytes:
        try:
            data: bytes = self._port.read(max(1, self._port.in_waiting))
        except (serial.SerialException, OSError) as exc:
            raise TransportError(f"serial {self.url}: read failed ({exc})") from exc
        self.bytes_received += len(data)
        return data

    def _wait_for(self, pattern: re.Pattern[bytes], deadline: float) -> re.Match[bytes] | None:
        """Read until ``pattern`` matches the buffer or the deadline passes. Returns None on a
        reboot (a login prompt at the end of the buffer), after keeping the boot log."""
        while True:
            match = pattern.search(self._buffer)
            if match:
                return match
            tail = bytes(self._buffer[-200:]).rstrip(b"\r\n") + b" "
            # A password prompt counts too: our pending end-marker line may have been read as
            # the user name by the fresh login.
            prompt = LOGIN_RE.search(tail) or PASSWORD_RE.search(tail)
            if prompt and not self._quiet(0.3, pattern):
                self.boot_log = bytes(self._buffer[-BOOT_LOG_LIMIT:]).decode(errors="replace")
                log.warning("serial %s: the board rebooted; boot log kept", self.url)
                return None
            if time.monotonic() > deadline:
                raise TransportError(f"serial {self.url}: no answer within the timeout")
            self._buffer += self._read_some()

    def _quiet(self, seconds: float, pattern: re.Pattern[bytes]) -> bool:
        """Read for ``seconds``; True when the pattern matched meanwhile (so what looked like a
        login prompt was ordinary output)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self._buffer += self._read_some()
            if pattern.search(self._buffer):
                return True
        return False

    @contextlib.contextmanager
    def _hold(self, timeout: float) -> Iterator[None]:
        """Have the console to ourselves for one exchange. Other processes that opened the same
        device wait (for up to ``timeout`` seconds), so two commands never interleave on the
        line; every exchange stands on its own, so taking turns between exchanges is safe."""
        if self._held or self._lock_fd is None:
            self._held += 1
            try:
                yield
            finally:
                self._held -= 1
            return
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TransportError(
                        f"serial {self.url}: another process kept the console busy for "
                        f"{timeout:.1f} s"
                    ) from None
                time.sleep(0.01)
        self._held = 1
        try:
            yield
        finally:
            self._held = 0
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _exec(
        self, command: str, timeout: float, *, interrupt_on_timeout: bool = True
    ) -> tuple[bytes, int]:
        """Run one shell command line; its output (``\\r`` removed) and exit status."""
        with self._hold(timeout):
            return self._exec_held(command, timeout, interrupt_on_timeout)

    def _exec_held(
        self, command: str, timeout: float, interrupt_on_timeout: bool
    ) -> tuple[bytes, int]:
        nonce = uuid.uuid4().hex[:12]
        begin, end = f"__NPUB{nonce}".encode(), f"__NPUE{nonce}".encode()
        pattern = re.compile(
            re.escape(begin) + rb"\r?\n(.*?)" + re.escape(end) + rb" (\d+) ?(\w*)\r?\n", re.S
        )
        self._buffer.clear()
        self._write(
            f"printf '%s%s\\n' __NPU B{nonce}; {command}\n"
            f"printf '%s%s %d %s\\n' __NPU E{nonce} $? \"$NPU_SID\"\n".encode()
        )
        try:
            match = self._wait_for(pattern, time.monotonic() + timeout)
        except TransportError:
            if interrupt_on_timeout:
                self._recover()
            raise TransportError(
                f"serial {self.url}: no end marker within {timeout:.1f} s; command interrupted"
            ) from None
        if match is None:
            self._sync(self.connect_timeout)
            raise TransportError(
                f"serial {self.url}: the board rebooted during a command (boot log kept)"
            )
        # Take the groups before trimming: a match on a bytearray reads the live buffer.
        output = bytes(match.group(1)).replace(b"\r\n", b"\n")
        status = int(match.group(2))
        sid = bytes(match.group(3)).decode()
        del self._buffer[: match.end()]
        if sid and sid != self._sid:
            # Another transport on this host set the same shell up since ours (pytest-xdist
            # workers taking turns on a board): a fresh shell has no NPU_SID at all.
            log.debug("serial %s: the shell was set up again by another transport", self.url)
            self._sid = sid
        elif sid != self._sid:
            # The end marker came from another shell than the one we set up: the board rebooted
            # (or the shell died) while the command ran, and what came between is its boot log.
            self.boot_log = output[-BOOT_LOG_LIMIT:].decode(errors="replace")
            self._sync(self.connect_timeout)
            raise TransportError(
                f"serial {self.url}: the shell was replaced during a command (reboot?); "
                "boot log kept"
            )
        return output, status

    def _recover(self) -> None:
        """After a timeout: interrupt whatever runs (or a half-typed heredoc) and resync."""
        with contextlib.suppress(TransportError):
            self._write(b"\x03\n")
        time.sleep(0.2)
        self._sync(self.connect_timeout)

    def _sync(self, timeout: float) -> None:
        """Bring the console to a known shell: log in if asked, no echo, no prompts."""
        with self._hold(timeout):
            self._sync_held(timeout)

    def _sync_held(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        self._buffer.clear()
        logged_in = kept_log = False
        # Listen before speaking: a board that is printing its boot log or a login prompt would
        # take a newline as an empty user name.
        poke = True
        while time.monotonic() < deadline:
            # Let the console finish what it is printing (a boot log) before judging its tail.
            settle = time.monotonic() + 0.3
            while time.monotonic() < settle:
                chunk = self._read_some()
                if chunk:
                    self._buffer += chunk
                    settle = time.monotonic() + 0.3
                if time.monotonic() > deadline:
                    break
            if not self._buffer and poke:
                poke = False
                self._write(b"\n")
                continue
            tail = bytes(self._buffer[-200:]).rstrip(b"\r\n") + b" "
            if LOGIN_RE.search(tail):
                # Text before the prompt's own line is what the board printed while booting.
                before = bytes(self._buffer).rsplit(b"\n", 1)[0] if b"\n" in self._buffer else b""
                # Only while we have not spoken yet: after our newline, the text is the board's
                # answer to it ("Login incorrect"), not its boot log.
                if before.strip() and not kept_log and poke:
                    kept_log = True
                    self.boot_log = bytes(self._buffer[-BOOT_LOG_LIMIT:]).decode(errors="replace")
                if self.user is None:
                    raise TransportError(f"serial {self.url}: a login prompt and no user set")
                self._buffer.clear()
                self._write(self.user.encode() + b"\n")
                continue
            if PASSWORD_RE.search(tail):
                password = os.environ.get(self.password_env or "")
                if password is None:
                    raise TransportError(
                        f"serial {self.url}: a password prompt and no password in the "
                        f"environment variable {self.password_env!r}"
                    )
                self._buffer.clear()
                self._write(password.encode() + b"\n")
                logged_in = True
                continue
            # Probably a shell: try a marker round trip.
            nonce = uuid.uuid4().hex[:12]
            marker = f"__NPUS{nonce}".encode()
            self._sid = nonce
            self._buffer.clear()
            self._write(
                f"stty -echo 2>/dev/null; PS1=''; PS2=''; NPU_SID={nonce}; "
                f"printf '%s%s\\n' __NPU S{nonce}\n".encode()
            )
            probe_end = min(deadline, time.monotonic() + 2.0)
            while time.monotonic() < probe_end:
                self._buffer += self._read_some()
                if marker in self._buffer:
                    self._buffer.clear()
                    log.debug("serial %s: in sync (logged in: %s)", self.url, logged_in)
                    return
                if LOGIN_RE.search(bytes(self._buffer[-200:]).rstrip(b"\r\n") + b" "):
                    break
        raise TransportError(f"serial {self.url}: no shell prompt within {timeout:.1f} s")
