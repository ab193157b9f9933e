"""A resident agent's stream over a serial console: the agent listens on a Unix socket and every
request is one console command running the relay (docs/runtime/agent.md, "The serial console").
Importing this module registers the stream with the transport, which knows nothing of agents."""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import re
import shlex
import time
import uuid
from collections.abc import Sequence
from pathlib import PurePosixPath

from npu_hil.harness.board.relay import EXIT_CUT, EXIT_DAMAGED, EXIT_GONE, EXIT_OK, TRAILER
from npu_hil.harness.board.wire import whole_frames
from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.base import StreamExit
from npu_hil.harness.transport.oserrors import describe_errno, errno_in_text
from npu_hil.harness.transport.serial_console import (
    SerialTransport,
    base64_heredoc,
    register_agent_stream,
)

log = logging.getLogger(__name__)

# The files of an agent's stream live beside the workdir's other content as <name>.<suffix>.
AGENT_FILES = ".npu-agent-"
# Answers up to this size come back inline in the relay command's output; longer ones (rare: a
# job's answer is its result document, a few kilobytes) through the chunked file transfer.
INLINE_MAX = 256 * 1024
STDERR_TAIL_BYTES = 16 * 1024
TEE_DRAIN_S = 0.3
STOP_POLL_S = 0.1
KILL_GRACE_S = 3.0
# How long an exit status may take to appear once the agent is gone (its keeper shell writes it).
STATUS_GRACE_S = 1.0
# How long a closing stream lets the agent leave by itself (it answered a shutdown, or asked
# for a restart) before it sends TERM.
EXIT_GRACE_S = 1.0
_RELAY_TRAILER = re.compile(re.escape(TRAILER.encode()) + rb" (\d+) ([0-9a-f]{64})")
_B64_TEXT = re.compile(rb"[A-Za-z0-9+/=]+")


def _listen_argv(argv: Sequence[str], socket_name: str) -> list[str]:
    """The agent's command with ``--serve`` (frames on stdin/stdout) replaced by
    ``--listen`` on a socket in the workdir."""
    args = list(argv)
    if len(args) < 2 or args.count("--serve") != 1:
        raise TransportError(
            "serial console: a stream runs the npu-hil agent "
            f"(python .../npu_hil_board --serve ...), not {args!r}"
        )
    at = args.index("--serve")
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


class SerialAgentStream:
    """A resident agent on a serial console, reached through the relay (the
    :class:`~npu_hil.harness.transport.base.Stream` of :meth:`SerialTransport.open_stream`).

    ``send`` collects request frames; the next ``recv`` runs the relay once for all of them, with
    the caller's timeout, and hands out the answer frames. A relay that cannot reach the agent
    before delivering anything is a :class:`TransportError` (as a send on a closed pipe); an
    agent that ended part-way is end of stream after the answers that came; no answer in time is
    a :class:`TransportError` after the relay is interrupted. Its files in the workdir,
    ``<name>.sock``, ``.err``, ``.pid``, ``.status`` and ``.out`` (the last answer), go on close.
    """

    def __init__(self, transport: SerialTransport, argv: Sequence[str]) -> None:
        self._transport = transport
        self._name = f"{AGENT_FILES}{uuid.uuid4().hex[:12]}"
        self._agent = _listen_argv(argv, self._file("sock"))
        self._python = self._agent[0]
        self._relay = str(PurePosixPath(self._agent[1]) / "relay.py")
        self._partial = bytearray()  # the start of a frame still being sent
        self._requests = bytearray()  # whole request frames the relay has yet to carry
        self._inbox = bytearray()  # answer bytes not yet received
        self._greeted = False
        self._ended = False
        self._exit: StreamExit | None = None
        self._start()

    @property
    def name(self) -> str:
        """The stem of the stream's files in the workdir (``.npu-agent-<id>``)."""
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

    def _start(self) -> None:
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

    # --- the Stream protocol -----------------------------------------------------------------

    def send(self, data: bytes) -> None:
        if self._exit is not None:
            raise TransportError(f"serial agent {self._name} is closed")
        self._partial += data
        try:
            _, used = whole_frames(bytes(self._partial))
        except ValueError as exc:
            raise TransportError(f"serial agent: not a request frame ({exc})") from None
        self._requests += self._partial[:used]
        del self._partial[:used]

    def recv(self, n: int, timeout: float) -> bytes:
        if self._exit is not None:
            return b""
        if not self._inbox and not self._ended:
            if self._greeted and not self._requests:
                raise TransportError(
                    f"serial agent {self._name}: no whole request is waiting for an answer"
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

    def close(self, timeout: float = 5.0) -> StreamExit:
        """Stop the agent (TERM, then KILL after ``timeout`` seconds) unless it already ended,
        remove the stream's files and say how it ended. Idempotent."""
        if self._exit is not None:
            return self._exit
        self._ended = True
        returncode: int | None = None
        stderr = b""
        try:
            returncode = self._stop(timeout)
            if returncode:
                # The agent's stderr reaches the file through its log tee (board.kernlog), a child
                # that drains the pipe after the agent is gone: a crash's last lines land a
                # moment after its exit status.
                time.sleep(TEE_DRAIN_S)
            stderr = self.stderr_tail()
            self._shell(f"rm -f {shlex.quote(self._name)}.*")
        except TransportError as exc:
            log.warning("serial agent %s: not stopped cleanly: %s", self._name, exc)
        self._exit = StreamExit(returncode, stderr)
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
                f"serial agent {self._name}: the agent is gone, the request was not "
                f"delivered ({_last_line(output)})"
            )
        if status not in (EXIT_OK, EXIT_GONE, EXIT_CUT):
            # A full or read-only disk under the relay's files is named, as the transport names
            # it for its own files.
            number = errno_in_text(output)
            named = "" if number is None else f"{describe_errno(number)} on the board: "
            raise TransportError(
                f"serial agent {self._name}: the relay failed on the board "
                f"(status {status}): {named}{_last_line(output)}",
                errno=number,
            )
        if status != EXIT_GONE:
            self._inbox += self._answer(output)
        if status != EXIT_OK:
            # The agent did not start, or it ended part-way: after what came, end of stream.
            log.info("serial agent %s ended: %s", self._name, _last_line(output))
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
            command += f" {base64_heredoc(requests)}"
        else:
            command += " </dev/null"
        retries = self._transport.retries
        for _ in range(retries + 1):
            output, status = self._shell(command, limit)
            if status != EXIT_DAMAGED:
                return output, status
            # The relay checked the request against its sha256 and sent nothing: send it again.
            log.warning("serial agent %s: a request arrived damaged", self._name)
        raise TransportError(
            f"serial agent {self._name}: a request did not arrive intact after {retries + 1} tries"
        )

    def _answer(self, output: bytes) -> bytes:
        answer, expected = _inline_answer(output)
        if answer is not None:
            return answer
        if expected is None or expected[0] <= INLINE_MAX:
            log.warning("serial agent %s: an answer arrived damaged", self._name)
        # The relay kept the answer on the board: fetch it, checked, rather than run it again.
        answer = self._transport._get_bytes(self._file("out"))
        if expected is not None and hashlib.sha256(answer).hexdigest() != expected[1]:
            raise TransportError(
                f"serial agent {self._name}: the answer kept on the board is not the "
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
        # A stream closed right after it started: the keeper shell may not have written the
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


register_agent_stream(SerialAgentStream)  # the transport's open_stream starts one
