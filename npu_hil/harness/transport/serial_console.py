"""SerialTransport: a board reached only through a shell on a serial console.

The link is pyserial's ``serial_for_url``: a device path (``/dev/ttyUSB0``), ``rfc2217://host:port``
(ser2net and friends) or ``socket://host:port`` (a raw TCP console server). The module is not called
``serial.py`` so that ``import serial`` always means pyserial. The console's shell (the wire,
login, markers) is :mod:`~npu_hil.harness.transport.serial_shell`, the chunked transfers
:mod:`~npu_hil.harness.transport.serial_files`; this module opens the console and serves the
Transport protocol on them.

How it talks to the shell:

- *Sync and login.* The transport sends a newline and reads what comes back. A login prompt gets
  the user name, a password prompt gets the password from the environment variable named by
  ``password_env`` (never from a file or an argument, so it cannot end up in an inventory or a
  report), and a shell gets ``stty -echo`` and empty prompts so that only command output comes
  back: echo would double the bytes on the wire and prompts would interleave with output.
- *Commands.* Each command is framed by two markers carrying a fresh nonce:
  ``printf '%s%s\\n' __NPU B<nonce>`` before and ``printf ... E<nonce> $?`` after. The marker text
  as *printed* (``__NPUB<nonce>``) never occurs in the command as *typed* (``__NPU B<nonce>``), so
  an echoing console cannot fake an end marker, and a nonce per command means stale output from
  an earlier, timed-out command is never taken for this one's. Output goes to files on the board
  and comes back through the checked ``get`` path, so binary output survives the tty's newline
  translation and line noise.
- *File transfer.* Base64 in chunks, each chunk verified by sha256 on the receiving side and
  resent when it does not match, plus a sha256 over the whole file before it is renamed into
  place (put) or handed to the caller (get). Why this rather than a binary framing protocol with
  CRCs: a binary protocol needs a cooperating program on the board that reads the raw tty
  (and raw mode, so ``^C``/``^D``/XON bytes survive), and a board console has only a shell and
  busybox; base64 + ``sha256sum`` + ``dd`` exist on every board, pass through a canonical-mode tty
  untouched, and cost a fixed 25 % (efficiency stays above 0.7 with 16 KiB chunks). Why per chunk
  rather than only per file: at realistic noise rates a multi-megabyte file would almost never
  arrive intact in one piece; a chunk usually does, so a retry costs 16 KiB, not the file.
- *Recovery.* A timeout sends ``^C`` and resyncs with a marker, discarding everything before it
  (line noise, a half-finished heredoc). A login prompt seen while waiting for a command means the
  board rebooted: the text since the last good exchange is kept as :attr:`boot_log`, the
  transport logs in again and the interrupted call raises :class:`TransportError` (its command's
  effect is unknown), so the next call works on the fresh shell.
- *Sharing.* Several processes of one host may open the same console device (pytest-xdist
  workers taking turns on a board): each exchange holds an ``flock`` on the device, so two
  commands never interleave on the line. A shell that another transport set up since ours (it
  reports that transport's ``NPU_SID``) is still the same shell; only a shell with no ``NPU_SID``
  at all is a fresh one, after a reboot.
- *Resident agents.* The console is one byte stream and it carries the control shell, so a
  resident agent cannot be a process talking on stdin/stdout as over SSH. ``open_stream`` hands the
  console to the agent's own stream for a console (``npu_hil.harness.agent.serial_stream``, which
  registers itself here when imported: the transport knows nothing of the agent's frames): it
  starts the agent in the background on a Unix socket in the workdir and carries every request
  as one more console command. One resident agent at a time.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Protocol
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import serial

from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.base import CompletedRun, Stream
from npu_hil.harness.transport.defaults import BAUDRATE, BOARD_PYTHON
from npu_hil.harness.transport.serial_files import ConsoleFiles
from npu_hil.harness.transport.workdir import check_workdir_probe, workdir_probe

__all__ = ["ConsoleStream", "SerialTransport", "prepare_url", "register_agent_stream"]

log = logging.getLogger(__name__)


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
    keys = {key for key, _ in parse_qsl(parts.query, keep_blank_values=True)}
    keys |= {item for item in parts.query.split("&") if item and "=" not in item}
    if "ign_set_control" in keys:
        return url
    query = f"{parts.query}&ign_set_control" if parts.query else "ign_set_control"
    return urlunsplit(parts._replace(query=query))


class SerialTransport(ConsoleFiles):
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
        self._workdir = workdir.rstrip("/") or "/"
        self._python = python
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
            probe = self._checked(workdir_probe(self._workdir), "create workdir")
            check_workdir_probe(self._workdir, probe, f"serial {self.url}")
        except BaseException:
            self.close()
            raise

    # --- the Transport protocol -------------------------------------------------------------

    @property
    def workdir(self) -> str:
        return self._workdir

    @property
    def python(self) -> str:
        return self._python

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
        line = f"cd {shlex.quote(self._workdir)} && {command} <{redirect_in} >{out} 2>{err}"
        try:
            _, returncode = self._exec(line, timeout, interrupt_on_timeout=True)
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
