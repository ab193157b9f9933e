"""SerialTransport: a board reached only through a shell on a serial console.

The link is pyserial's ``serial_for_url``: a device path (``/dev/ttyUSB0``), ``rfc2217://host:port``
(ser2net and friends) or ``socket://host:port`` (a raw TCP console server). The module is not called
``serial.py`` so that ``import serial`` always means pyserial. The console's shell (the wire,
login, markers) is :mod:`~harness.transport.serial_shell`, the chunked transfers
:mod:`~harness.transport.serial_files`; this module opens the console and serves the Transport
protocol on them.

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
- *Agent sessions.* The console is one byte stream and it carries the control shell, so an agent
  session cannot be a process talking on stdin/stdout as over SSH. ``open_session`` starts the
  agent in the background instead (``agent.py --listen``, a Unix socket in the workdir) and
  returns a :class:`SerialAgentSession`: every request is one more console command, which runs the
  relay (``relay.py``, deployed beside the agent) to carry the request frames to the socket and
  the answers back, base64 and sha256-checked both ways. The agent keeps its runtime and loaded
  models between requests, and the console is a plain shell again in between, for the job's file
  transfers.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import logging
import re
import shlex
import time
import uuid
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import serial

from npu_hil.harness.agent.relay import (
    EXIT_CUT,
    EXIT_DAMAGED,
    EXIT_GONE,
    EXIT_OK,
    TRAILER,
    whole_frames,
)
from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.base import CompletedRun, SessionExit
from npu_hil.harness.transport.defaults import BAUDRATE, BOARD_PYTHON
from npu_hil.harness.transport.serial_files import ConsoleFiles
from npu_hil.harness.transport.serial_files import base64_body as _base64_body
from npu_hil.harness.transport.workdir import check_workdir_probe, workdir_probe

__all__ = ["SerialAgentSession", "SerialTransport", "prepare_url"]

log = logging.getLogger(__name__)


# Agent sessions: the files of one live beside the workdir's other content as <name>.<suffix>.
SESSION_FILES = ".npu-session-"
# Answers up to this size come back inline in the relay command's output; longer ones (rare: a
# job's answer is its result document, a few kilobytes) through the chunked file transfer.
INLINE_MAX = 256 * 1024
STDERR_TAIL_BYTES = 16 * 1024
STOP_POLL_S = 0.1
KILL_GRACE_S = 3.0
# How long an exit status may take to appear once the agent is gone (its keeper shell writes it).
STATUS_GRACE_S = 1.0
# How long a closing session lets the agent leave by itself (it answered a shutdown, or asked
# for a restart) before it sends TERM.
EXIT_GRACE_S = 1.0
_RELAY_TRAILER = re.compile(re.escape(TRAILER.encode()) + rb" (\d+) ([0-9a-f]{64})")
_B64_TEXT = re.compile(rb"[A-Za-z0-9+/=]+")


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
        self._session: SerialAgentSession | None = None
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
        if self._session is not None and not self._session.closed:
            # Stopping it takes the console, which may be what failed: leave that to its owner
            # (AgentClient.close). An agent left behind exits after its idle timeout.
            name = self._session.name
            log.warning("serial %s: closed with agent session %s still open", self.url, name)
        with contextlib.suppress(Exception):
            self._port.close()

    def __enter__(self) -> SerialTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def exists(self, remote_path: str | PurePosixPath) -> bool:
        return self._exec(f"test -e {self._remote(remote_path)}", self.command_timeout)[1] == 0

    def cleanup(self, remote_path: str | PurePosixPath) -> None:
        self._checked(f"rm -rf {self._remote(remote_path)}", f"cleanup {remote_path}")

    def open_session(self, argv: Sequence[str]) -> SerialAgentSession:
        """Start the agent of ``argv`` (``python agent.py --session ...``, as AgentClient runs it)
        in the background, listening on a socket in the workdir, and return its session. One at a
        time: the console carries one command at a time, and every request is a command."""
        if self._session is not None and not self._session.closed:
            raise TransportError(
                f"serial {self.url}: an agent session is already open on this console; "
                "close it first"
            )
        session = SerialAgentSession(self, argv)
        session.start()
        self._session = session
        return session

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


# --- agent sessions ---------------------------------------------------------------------------


def _listen_argv(argv: Sequence[str], socket_name: str) -> list[str]:
    """The agent's session command with ``--session`` (frames on stdin/stdout) replaced by
    ``--listen`` on a socket in the workdir."""
    args = list(argv)
    if len(args) < 2 or args.count("--session") != 1:
        raise TransportError(
            f"serial console: a session runs the npu-hil agent (python agent.py --session ...), "
            f"not {args!r}"
        )
    at = args.index("--session")
    return [*args[:at], "--listen", socket_name, *args[at + 1 :]]


def _exit_code(text: bytes) -> int | None:
    """The exit status a shell reported (``$?``), as Popen says it: 128+N, killed by signal N,
    becomes -N. None when ``text`` is not a status."""
    value = text.strip()
    if not value.isdigit():
        return None
    code = int(value)
    return -(code - 128) if code > 128 else code


def _inline_answer(output: bytes) -> tuple[bytes | None, tuple[int, str] | None]:
    """The answer the relay printed (base64 lines, then ``NPU-RELAY <size> <sha256>``) when it
    arrived intact, else None; and the (size, sha256) of the answer when the trailer survived."""
    trailers = list(_RELAY_TRAILER.finditer(output))
    if not trailers:
        return None, None
    trailer = trailers[-1]
    expected = (int(trailer.group(1)), trailer.group(2).decode())
    lines = output[: trailer.start()].splitlines()
    text = b"".join(line for line in lines if _B64_TEXT.fullmatch(line))
    try:
        answer = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None, expected
    if (len(answer), hashlib.sha256(answer).hexdigest()) != expected:
        return None, expected
    return answer, expected


class SerialAgentSession:
    """A resident agent on a serial console, reached through the relay (the
    :class:`~harness.transport.base.Session` of :meth:`SerialTransport.open_session`).

    The agent runs in the background (``agent.py --listen``) under a small keeper shell that
    waits for it and writes its exit status, so the host can say how it ended. ``send`` collects
    request frames; the next ``recv`` runs the relay once for all of them, as one console command
    with the caller's timeout, and hands out the answer frames (the first connection's hello
    included, later ones dropped by the relay). The console is the control shell again between
    requests.

    How requests end: the relay could not reach the agent (it is gone: killed, rebooted, idle
    too long) before anything was delivered, a :class:`TransportError`, as a send on a closed
    pipe is; the agent ended part-way through its answers (a crash), end of stream once the
    answers that did come are read; no answer within the timeout, a :class:`TransportError`
    after the relay is interrupted. A request damaged by line noise is refused by the relay and
    sent again; an answer damaged on the way back is fetched from the board's copy through the
    checked file transfer, never by running its requests a second time.

    Files, in the workdir: ``<name>.sock`` (the agent's socket), ``.err`` (its stderr), ``.pid``,
    ``.status`` (its exit status) and ``.out`` (the last answer); ``close`` removes them.
    """

    def __init__(self, transport: SerialTransport, argv: Sequence[str]) -> None:
        self._transport = transport
        self._name = f"{SESSION_FILES}{uuid.uuid4().hex[:12]}"
        self._agent = _listen_argv(argv, self._file("sock"))
        self._python = self._agent[0]
        self._relay = str(PurePosixPath(self._agent[1]).with_name("relay.py"))
        self._partial = bytearray()  # the start of a frame still being sent
        self._requests = bytearray()  # whole request frames the relay has yet to carry
        self._inbox = bytearray()  # answer bytes not yet received
        self._greeted = False
        self._ended = False
        self._exit: SessionExit | None = None

    @property
    def name(self) -> str:
        """The stem of the session's files in the workdir (``.npu-session-<id>``)."""
        return self._name

    @property
    def closed(self) -> bool:
        return self._exit is not None

    def _file(self, suffix: str) -> str:
        return f"{self._name}.{suffix}"

    def _shell(self, command: str, timeout: float | None = None) -> tuple[bytes, int]:
        transport = self._transport
        return transport._exec(
            f"cd {shlex.quote(transport.workdir)} && {command}",
            transport.command_timeout if timeout is None else timeout,
        )

    def start(self) -> None:
        """Start the agent in the background and return at once; the first ``recv`` waits for
        its hello."""
        agent = " ".join(shlex.quote(a) for a in self._agent)
        pid, status = self._file("pid"), self._file("status")
        # The keeper shell is the agent's parent and waits for it, so the exit status is kept
        # although the console's shell never waits. nohup keeps both through a hangup of the
        # console; a background job of a shell without job control ignores the ^C with which the
        # transport interrupts a command, and one with job control runs in a process group of
        # its own, out of the ^C's reach.
        keeper = (
            f"{agent} </dev/null >/dev/null 2>{self._file('err')} & echo $! >{pid}; "
            f"wait $!; echo $? >{status}.tmp; mv -f {status}.tmp {status}"
        )
        command = f"{{ nohup sh -c {shlex.quote(keeper)} </dev/null >/dev/null 2>&1 & }}"
        output, code = self._shell(command)
        if code != 0:
            raise TransportError(
                f"serial {self._transport.url}: cannot start the agent (status {code}): "
                f"{output[-300:].decode(errors='replace')}"
            )

    # --- the Session protocol -----------------------------------------------------------------

    def send(self, data: bytes) -> None:
        if self._exit is not None:
            raise TransportError(f"serial agent session {self._name} is closed")
        self._partial += data
        try:
            _, used = whole_frames(bytes(self._partial))
        except ValueError as exc:
            raise TransportError(f"serial agent session: not a request frame ({exc})") from None
        self._requests += self._partial[:used]
        del self._partial[:used]

    def recv(self, n: int, timeout: float) -> bytes:
        if self._exit is not None:
            return b""
        if not self._inbox and not self._ended:
            if self._greeted and not self._requests:
                raise TransportError(
                    f"serial agent session {self._name}: no whole request is waiting for an answer"
                )
            self._exchange(timeout)
        chunk = bytes(self._inbox[:n])
        del self._inbox[:n]
        return chunk

    def stderr_tail(self) -> bytes:
        if self._exit is not None:
            return self._exit.stderr
        output, _ = self._shell(f"tail -c {STDERR_TAIL_BYTES} {self._file('err')} 2>/dev/null")
        return output

    def close(self, timeout: float = 5.0) -> SessionExit:
        """Stop the agent (TERM, then KILL after ``timeout`` seconds) unless it already ended,
        remove the session's files and say how it ended. Idempotent."""
        if self._exit is not None:
            return self._exit
        self._ended = True
        returncode: int | None = None
        stderr = b""
        try:
            returncode = self._stop(timeout)
            stderr = self.stderr_tail()
            self._shell(f"rm -f {shlex.quote(self._name)}.*")
        except TransportError as exc:
            log.warning("serial agent session %s: not stopped cleanly: %s", self._name, exc)
        self._exit = SessionExit(returncode, stderr)
        return self._exit

    # --- requests -------------------------------------------------------------------------------

    def _exchange(self, timeout: float) -> None:
        """Carry the waiting requests to the agent and queue its answers."""
        requests = bytes(self._requests)
        self._requests.clear()
        greeting = not self._greeted
        output, status = self._run_relay(requests, timeout, greeting)
        self._greeted = True
        if status == EXIT_GONE and not greeting:
            self._ended = True
            raise TransportError(
                f"serial agent session {self._name}: the agent is gone, the request was not "
                f"delivered ({_last_line(output)})"
            )
        if status not in (EXIT_OK, EXIT_GONE, EXIT_CUT):
            raise TransportError(
                f"serial agent session {self._name}: the relay failed on the board "
                f"(status {status}): {_last_line(output)}"
            )
        if status != EXIT_GONE:
            self._inbox += self._answer(output)
        if status != EXIT_OK:
            # The agent did not start, or it ended part-way: after what came, end of stream.
            log.info("serial agent session %s ended: %s", self._name, _last_line(output))
            self._ended = True

    def _run_relay(self, requests: bytes, timeout: float, greeting: bool) -> tuple[bytes, int]:
        argv = [self._python, "-I", "-S", self._relay, "--base64"]
        argv += ["--sha256", hashlib.sha256(requests).hexdigest(), "--out", self._file("out")]
        argv += ["--inline-max", str(INLINE_MAX)]
        limit = timeout
        if greeting:
            # The agent was just started: the relay waits for its socket, or for its end.
            argv += ["--wait", f"{timeout:g}", "--exited", self._file("status")]
            limit += self._transport.command_timeout
        else:
            argv.append("--drop-hello")
        command = " ".join(shlex.quote(a) for a in [*argv, self._file("sock")])
        if requests:
            eof = f"NPU_EOF_{uuid.uuid4().hex[:8]}"
            command += f" <<'{eof}'\n{_base64_body(requests)}\n{eof}"
        else:
            command += " </dev/null"
        retries = self._transport.retries
        for _ in range(retries + 1):
            output, status = self._shell(command, limit)
            if status != EXIT_DAMAGED:
                return output, status
            # The relay checked the request against its sha256 and sent nothing: send it again.
            log.warning("serial agent session %s: a request arrived damaged", self._name)
        raise TransportError(
            f"serial agent session {self._name}: a request did not arrive intact after "
            f"{retries + 1} tries"
        )

    def _answer(self, output: bytes) -> bytes:
        answer, expected = _inline_answer(output)
        if answer is not None:
            return answer
        if expected is None or expected[0] <= INLINE_MAX:
            log.warning("serial agent session %s: an answer arrived damaged", self._name)
        # The relay kept the answer on the board: fetch it, checked, rather than run it again.
        answer = self._transport._get_bytes(self._file("out"))
        if expected is not None and hashlib.sha256(answer).hexdigest() != expected[1]:
            raise TransportError(
                f"serial agent session {self._name}: the answer kept on the board is not the "
                "one the relay reported"
            )
        return answer

    # --- stopping -------------------------------------------------------------------------------

    def _stop(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        # An agent that answered a shutdown, or asked for a restart, is on its way out: a moment
        # for it to leave by itself, so that the status reported is its own, not our TERM.
        status = self._await_status(min(timeout, EXIT_GRACE_S))
        if status is not None:
            return status
        # A session closed right after it started: the keeper shell may not have written the
        # agent's pid yet, and an agent nobody can name would live on until its idle timeout.
        self._await_pid(STATUS_GRACE_S)
        status, signalled = self._signal("TERM")
        if status is None:
            remaining = max(0.0, deadline - time.monotonic())
            status = self._await_status(remaining if signalled else STATUS_GRACE_S)
        if status is None and signalled:
            status, signalled = self._signal("KILL")
            if status is None:
                status = self._await_status(KILL_GRACE_S if signalled else STATUS_GRACE_S)
        return status

    def _signal(self, name: str) -> tuple[int | None, bool]:
        """Signal the agent unless it already ended: (its exit status if it did, whether a
        signal was sent)."""
        pid, status = self._file("pid"), self._file("status")
        output, _ = self._shell(
            f"if [ -e {status} ]; then cat {status}; "
            f'elif p=$(cat {pid} 2>/dev/null) && [ -n "$p" ] && kill -{name} "$p" 2>/dev/null; '
            "then echo signalled; fi"
        )
        return _exit_code(output), output.strip() == b"signalled"

    def _await_pid(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        pid, status = self._file("pid"), self._file("status")
        while time.monotonic() < deadline:
            if self._shell(f"test -s {pid} || test -e {status}")[1] == 0:
                return
            time.sleep(STOP_POLL_S)

    def _await_status(self, seconds: float) -> int | None:
        deadline = time.monotonic() + seconds
        while True:
            output, _ = self._shell(f"cat {self._file('status')} 2>/dev/null")
            status = _exit_code(output)
            if status is not None or time.monotonic() >= deadline:
                return status
            time.sleep(STOP_POLL_S)


def _last_line(output: bytes) -> str:
    lines = output.decode(errors="replace").strip().splitlines()
    return lines[-1][-300:] if lines else "no output"
