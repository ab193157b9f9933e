"""SerialTransport: a board reached only through a shell on a serial console (pyserial's
``serial_for_url``: a device, ``rfc2217://`` or ``socket://``). How it talks to the shell, moves
files and recovers: docs/runtime/agent.md ("The serial console"). Not called ``serial.py`` so
that ``import serial`` always means pyserial."""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import re
import shlex
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Protocol
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import serial

from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.base import CompletedRun, Stream, remote_path
from npu_hil.harness.transport.defaults import BAUDRATE, BOARD_PYTHON
from npu_hil.harness.transport.oserrors import board_os_error, errno_in_text
from npu_hil.harness.transport.workdir import check_workdir_probe, workdir_probe

log = logging.getLogger(__name__)

LOGIN_RE = re.compile(rb"(?i)login:\s*$")
PASSWORD_RE = re.compile(rb"(?i)password:\s*$")
BOOT_LOG_LIMIT = 256 * 1024
# A canonical-mode tty accepts at most 4095 characters per line; stay far below.
B64_LINE = 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")


def raise_os_error(what: str, output: bytes) -> None:
    """TransportError naming the errno when the board's shell said one (``cat: write error: No
    space left on device``, ``can't create ...: Read-only file system``)."""
    number = errno_in_text(output)
    if number is not None and number != errno.ENOENT:
        raise board_os_error(what, number, output.strip()[-300:].decode(errors="replace"))


def base64_heredoc(data: bytes) -> str:
    """``<<'EOF'``, ``data`` as base64 lines short enough for a canonical-mode tty, and a
    terminator no base64 line can be."""
    text = base64.b64encode(data).decode("ascii")
    body = "\n".join(text[i : i + B64_LINE] for i in range(0, len(text), B64_LINE))
    eof = f"NPU_EOF_{uuid.uuid4().hex[:8]}"
    return f"<<'{eof}'\n{body}\n{eof}"


class ConsoleStream(Stream, Protocol):
    """The resident agent's stream a console carries (one at a time), as the transport keeps it."""

    @property
    def name(self) -> str: ...

    @property
    def closed(self) -> bool: ...


AgentStreams = Callable[["SerialTransport", Sequence[str]], ConsoleStream]
_agent_streams: list[AgentStreams] = []


def register_agent_stream(opener: AgentStreams) -> None:
    """Set how :meth:`SerialTransport.open_stream` starts a resident agent: the agent side's
    (``npu_hil.harness.agent.serial_stream``) opener, which registers itself when imported."""
    _agent_streams[:] = [opener]


def prepare_url(url: str) -> str:
    """The URL handed to pyserial. For ``rfc2217://`` add ``ign_set_control`` when absent: stock
    pyserial waits for the server to acknowledge the 'control' option (flow control/modem lines),
    which ser2net on a pty never does, so every open would time out after several seconds. A
    console needs no modem control lines, so ignoring that acknowledgement loses nothing."""
    parts = urlsplit(url)
    if parts.scheme != "rfc2217":
        return url
    # keep_blank_values: a bare ``ign_set_control`` (no ``=``) is a key too.
    keys = {key for key, _ in parse_qsl(parts.query, keep_blank_values=True)}
    if "ign_set_control" in keys:
        return url
    query = f"{parts.query}&ign_set_control" if parts.query else "ign_set_control"
    return urlunsplit(parts._replace(query=query))


class SerialTransport:
    """Files and commands on a board through its serial console shell.

    ``workdir`` is an absolute directory on the board (created on connect). ``user`` and
    ``password_env`` are used only when a login prompt shows. ``command_timeout`` bounds each
    control exchange (a marker round trip, a chunk); ``connect_timeout`` bounds login and sync
    (a booting board may take a while before it prints a prompt). ``chunk_size`` is the transfer
    unit that is checked and resent; ``retries`` bounds resends per chunk and per file.
    """

    def __init__(
        self,
        url: str,
        *,
        workdir: str,
        baudrate: int = BAUDRATE,
        user: str | None = None,
        password_env: str | None = None,
        python: str = BOARD_PYTHON,
        command_timeout: float = 10.0,
        connect_timeout: float = 30.0,
        chunk_size: int = 16 * 1024,
        retries: int = 5,
    ) -> None:
        if not workdir.startswith("/"):
            raise ValueError(f"workdir {workdir!r}: expected an absolute path on the board")
        self.url = prepare_url(url)
        self.workdir = workdir.rstrip("/") or "/"
        self.python = python
        self.user = user
        self.password_env = password_env
        self.command_timeout = command_timeout
        self.connect_timeout = connect_timeout
        self.chunk_size = chunk_size
        self.retries = retries
        self.boot_log = ""
        self.bytes_sent = 0
        self.bytes_received = 0
        self._buffer = bytearray()
        self._sid = ""  # names the shell we set up; a different one means the board rebooted
        self._stream: ConsoleStream | None = None
        self._lock_fd: int | None = None  # the device, locked for each exchange
        self._held = 0  # nesting depth of _hold
        try:
            # Short read timeout: every wait below loops on its own deadline, so a read can
            # never block past it; the write timeout keeps a stuck link from blocking a write.
            # pyserial's rfc2217 client refuses a write timeout (NotImplementedError); there the
            # TCP socket's own send buffer and the server's flow control bound a write instead.
            extra = {} if self.url.startswith("rfc2217://") else {"write_timeout": command_timeout}
            self._port = serial.serial_for_url(self.url, baudrate=baudrate, timeout=0.05, **extra)
        except (serial.SerialException, OSError, ValueError, NotImplementedError) as exc:
            raise TransportError(f"serial {url}: cannot open ({exc})") from exc
        if "://" not in self.url:
            # A device file: other processes of this host may open it too (pytest-xdist workers
            # taking turns on a board). A console server (rfc2217://, socket://) serves one
            # client at a time by itself.
            with contextlib.suppress(AttributeError, OSError, ValueError):
                self._lock_fd = self._port.fileno()
        try:
            self._sync(self.connect_timeout)
            # Before anything is deployed there: whose folder it is (UnsafeFolderError).
            probe = self._checked(workdir_probe(self.workdir), "create workdir")
            check_workdir_probe(self.workdir, probe, f"serial {self.url}")
        except BaseException:
            self.close()
            raise

    # --- the Transport protocol -------------------------------------------------------------

    def take_boot_log(self) -> str:
        """The boot log of the last reboot seen (``""`` if none since the last call); taken, so a
        report shows each boot once."""
        text, self.boot_log = self.boot_log, ""
        return text

    def close(self) -> None:
        if self._stream is not None and not self._stream.closed:
            # Stopping it takes the console, which may be what failed: leave that to its owner
            # (AgentClient.close). An agent left behind exits after its idle timeout.
            name = self._stream.name
            log.warning("serial %s: closed with agent %s still running", self.url, name)
        with contextlib.suppress(Exception):
            self._port.close()

    def __enter__(self) -> SerialTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def prove(self) -> None:
        """The shell answers: one marker round trip (the console was synced and the workdir
        probed when it opened; ``run(["true"])`` would add its output files' transfers)."""
        self._checked("true", f"serial {self.url}: prove the shell")

    def exists(self, remote_path: str | PurePosixPath) -> bool:
        return self._exec(f"test -e {self._remote(remote_path)}", self.command_timeout)[1] == 0

    def cleanup(self, remote_path: str | PurePosixPath) -> None:
        self._checked(f"rm -rf {self._remote(remote_path)}", f"cleanup {remote_path}")

    def open_stream(self, argv: Sequence[str]) -> ConsoleStream:
        """Start the agent of ``argv`` (``python .../npu_hil_board --serve ...``, as AgentClient
        runs it) in the background, listening on a socket in the workdir, and return its stream.
        One at a time: the console carries one command at a time, and every request is a
        command."""
        if self._stream is not None and not self._stream.closed:
            raise TransportError(
                f"serial {self.url}: a resident agent already runs on this console; close it first"
            )
        if not _agent_streams:
            raise TransportError(
                f"serial {self.url}: no agent stream is registered for a console "
                "(npu_hil.harness.agent.serial_stream registers it when imported)"
            )
        stream = _agent_streams[0](self, argv)
        self._stream = stream
        return stream

    def run(
        self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None
    ) -> CompletedRun:
        started = time.monotonic()
        tag = uuid.uuid4().hex[:12]
        base = f".npu-run-{tag}"
        redirect_in = "/dev/null"
        if stdin is not None:
            self._put_bytes(stdin, f"{base}.in")
            redirect_in = self._remote(f"{base}.in")
        out, err = self._remote(f"{base}.out"), self._remote(f"{base}.err")
        command = " ".join(shlex.quote(a) for a in argv)
        line = f"cd {shlex.quote(self.workdir)} && {command} <{redirect_in} >{out} 2>{err}"
        try:
            _, returncode = self._exec(line, timeout)
            stdout = self._get_bytes(f"{base}.out")
            stderr = self._get_bytes(f"{base}.err")
        finally:
            with contextlib.suppress(TransportError):
                self._exec(f"rm -f {self._remote(base)}.*", self.command_timeout)
        return CompletedRun(returncode, stdout, stderr, time.monotonic() - started)

    def put(self, local_path: str | Path, remote_path: str | PurePosixPath) -> None:
        try:
            data = Path(local_path).read_bytes()
        except OSError as exc:
            raise TransportError(f"put {local_path}: {exc}") from exc
        self._put_bytes(data, remote_path)

    def get(self, remote_path: str | PurePosixPath, local_path: str | Path) -> None:
        data = self._get_bytes(remote_path)
        target = Path(local_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    # --- the shell ------------------------------------------------------------------------

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

    def _exec(self, command: str, timeout: float) -> tuple[bytes, int]:
        """Run one shell command line; its output (``\\r`` removed) and exit status. A command
        without its end marker in time is interrupted."""
        with self._hold(timeout):
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

    # --- files: base64 in chunks, each checked by sha256 ------------------------------------

    def _remote(self, path: str | PurePosixPath) -> str:
        return shlex.quote(f"{self.workdir}/{remote_path(path)}")

    def _put_bytes(self, data: bytes, path: str | PurePosixPath) -> None:
        pure = remote_path(path)
        target = self._remote(pure)
        tmp = self._remote(f"{pure.parent}/.{pure.name}.{uuid.uuid4().hex[:8]}.tmp")
        chunk_file = f"{tmp}.c"
        parent = shlex.quote(f"{self.workdir}/{pure.parent}")
        digest = hashlib.sha256(data).hexdigest()
        try:
            if len(data) <= self.chunk_size:
                # The file is its only chunk: created, checked and renamed in one exchange
                # (four before: create, chunk, check and rename, clean-up), and resent whole
                # when the board's sha256 differs. A job's files are mostly this size.
                self._retry(
                    f"mkdir -p {parent} && base64 -d >{tmp} {base64_heredoc(data)}\n"
                    f'if [ "$(sha256sum <{tmp} | cut -c1-64)" = {digest} ]; '
                    f"then mv -f {tmp} {target}; else rm -f {tmp}; false; fi",
                    f"put {pure}",
                )
                return
            for offset in range(0, len(data), self.chunk_size):
                chunk = data[offset : offset + self.chunk_size]
                # One exchange per chunk: decode into a chunk file, append it only if its sha256
                # matches, so a damaged chunk never reaches the file and is simply resent. The
                # first one makes the folder and starts the file.
                first = offset == 0
                command = (
                    f"{f'mkdir -p {parent} && ' if first else ''}"
                    f"base64 -d >{chunk_file} {base64_heredoc(chunk)}\n"
                    f'[ "$(sha256sum <{chunk_file} | cut -c1-64)" = '
                    f"{hashlib.sha256(chunk).hexdigest()} ] "
                    f"&& cat {chunk_file} {'>' if first else '>>'}{tmp}"
                )
                self._retry(command, f"put {pure}: chunk at {offset}")
            self._checked(
                f'[ "$(sha256sum <{tmp} | cut -c1-64)" = {digest} ] && mv -f {tmp} {target} '
                f"&& rm -f {chunk_file}",
                f"put {pure}: whole-file sha256 or rename",
            )
        except BaseException:
            with contextlib.suppress(TransportError):
                self._exec(f"rm -f {tmp} {chunk_file}", self.command_timeout)
            raise

    def _get_bytes(self, path: str | PurePosixPath) -> bytes:
        source = self._remote(path)
        size, digest, head = self._get_head(source, path)
        if head is not None:
            return head  # checked against the board's sha256 already
        data = bytearray()
        for index in range((size + self.chunk_size - 1) // self.chunk_size):
            data += self._get_chunk(source, index, f"get {path}: chunk {index}")
        if len(data) == size and hashlib.sha256(data).hexdigest() != digest:
            # The whole-file sha256 came in the first answer: one more look before calling
            # the file damaged, in case it was that line the noise hit.
            digest = self._whole_sha256(source, path)
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            raise TransportError(f"get {path}: whole-file sha256 differs; damaged or changed")
        return bytes(data)

    def _get_head(self, source: str, path: str | PurePosixPath) -> tuple[int, str, bytes | None]:
        """(size, sha256, the content when it fits in one chunk, else None) in one exchange:
        three before (the size, the chunk, the whole-file sha256) for what a job's files are."""
        command = (
            f"n=$(wc -c <{source}) && echo $n && sha256sum <{source} && "
            f"if [ $n -le {self.chunk_size} ]; then base64 <{source}; fi"
        )
        problem = "no attempt"
        for _ in range(self.retries + 1):
            output, status = self._exec(command, self.command_timeout)
            if status != 0:
                raise TransportError(f"get {path}: no such file in {self.workdir} on the board")
            lines = output.split(b"\n", 2)
            sha = lines[1][:64].decode(errors="replace") if len(lines) > 1 else ""
            if not lines[0].strip().isdigit() or not _SHA256.fullmatch(sha):
                problem = "a damaged size or sha256 line"
                continue
            size = int(lines[0])
            if size > self.chunk_size:
                return size, sha, None
            try:
                body = b"".join(lines[2].split()) if len(lines) > 2 else b""
                data = base64.b64decode(body, validate=True)
            except ValueError:
                problem = "invalid base64"
                continue
            if len(data) == size and hashlib.sha256(data).hexdigest() == sha:
                return size, sha, data
            problem = "sha256 mismatch"
        raise TransportError(
            f"get {path}: not received intact after {self.retries + 1} tries ({problem})"
        )

    def _whole_sha256(self, source: str, path: str | PurePosixPath) -> str:
        for _ in range(self.retries + 1):
            output, status = self._exec(f"sha256sum <{source}", self.command_timeout)
            sha = output.strip()[:64].decode(errors="replace")
            if status == 0 and _SHA256.fullmatch(sha):
                return sha
        raise TransportError(f"get {path}: the board gave no sha256 of the file")

    def _get_chunk(self, source: str, index: int, what: str) -> bytes:
        command = (
            f"dd if={source} bs={self.chunk_size} skip={index} count=1 2>/dev/null | base64"
            f"; printf '%s%s\\n' __NPU SUM"
            f"; dd if={source} bs={self.chunk_size} skip={index} count=1 2>/dev/null"
            " | sha256sum | cut -c1-64"
        )
        problem = "no attempt"
        for _ in range(self.retries + 1):
            try:
                output, status = self._exec(command, self.command_timeout)
            except TransportError as exc:
                problem = str(exc)
                continue
            text, _, digest = output.partition(b"__NPUSUM")
            try:
                chunk = base64.b64decode(b"".join(text.split()), validate=True)
            except ValueError:
                problem = "invalid base64"
                continue
            if status == 0 and hashlib.sha256(chunk).hexdigest().encode() == digest.strip():
                return chunk
            problem = "sha256 mismatch"
        raise TransportError(
            f"{what}: not received intact after {self.retries + 1} tries ({problem})"
        )

    def _retry(self, command: str, what: str) -> None:
        problem = "no attempt"
        for _ in range(self.retries + 1):
            try:
                output, status = self._exec(command, self.command_timeout)
            except TransportError as exc:
                problem = str(exc)
                continue
            if status == 0:
                return
            raise_os_error(what, output)  # a full disk is not fixed by resending
            problem = f"the board's check failed (status {status})"
        raise TransportError(
            f"{what}: not delivered intact after {self.retries + 1} tries ({problem})"
        )
