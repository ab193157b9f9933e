"""The serve loop: a resident agent's requests framed over a byte stream, one answer frame each
(the requests, their answers and their bounds: ``docs/runtime/agent.md``, Frames and requests);
and the listener loop, the serve loop on a Unix socket, for a board whose link cannot hold a byte
stream open beside its control shell (the page's Listening, and the relay)."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import mmap
import os
import platform
import socket
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, NoReturn

from .agent import Agent, StageFailed, new_kept_dir, traceback_tail, write_kept_view
from .boardstate import read_identity, read_memory
from .folders import UnsafeFolder, check_folder
from .job import DEFAULT_TIMEOUTS, MAX_INPUTS, MAX_JOB_INPUT_BYTES, JobRefused
from .loader import EXTRA_ADAPTERS, PACKAGE_DIR, available_adapters, is_adapter_name
from .modelstore import answer_model
from .wire import (
    AGENT_PROTOCOL,
    AGENT_VERSION,
    BULK_CHUNK,
    BULK_PREFIX,
    DIGEST_BYTES,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_TIMEOUT,
    FRAME_HEADER,
    JOB_SCHEMA,
    JOBS_FOLDER,
    MAX_REQUEST_BYTES,
    RESULT_SCHEMA,
    bulk_sizes,
    decode_frame,
    encode_bulk_frame,
    encode_frame,
    failure,
    frame_length,
    is_bulk,
    sha256_file,
)

log = logging.getLogger("npu-hil-agent")

# A job's message and its inputs, as job.py bounds them.
MAX_BULK_REQUEST_BYTES = (
    MAX_JOB_INPUT_BYTES + MAX_REQUEST_BYTES + BULK_PREFIX.size + DIGEST_BYTES * MAX_INPUTS
)

# The socket of a listening agent, removed on the way out: also by abandon, which skips the
# interpreter's own clean-up.
LISTENING: list[str] = []


def abandon(status: int) -> NoReturn:
    """Leave at once: the runtime thread is stuck in a vendor call, which interpreter shutdown
    would wait for. A listening agent removes its socket first, so the next connection fails at
    once and the host starts a new agent."""
    for path in LISTENING:
        remove_socket(path)
    sys.stderr.flush()
    os._exit(status)


def remove_socket(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class ReadTimeout(Exception):
    """A client sent nothing (or half a frame) for longer than the connection's read timeout."""


class BadFrame(ValueError):
    """A frame that arrived whole but holds no request (not JSON, nested too deep, not an
    object): the stream is still in step, so it is answered and the agent goes on."""


class Request(NamedTuple):
    """A request and, when it came in a bulk frame, its buffers (read and hashed as they came)
    and the indices of those whose sha256 is not the one the trailer gives."""

    message: dict[str, object]
    buffers: list[Any] | None = None  # bytearray, or an mmap of a file for a large one
    damaged: tuple[int, ...] = ()


IN_MEMORY_BYTES = 16 << 20
"""A bulk buffer up to this size is read into memory; a larger one streams into a file of the
agent's own jobs folder, mapped back (the page cache holds it, not the agent's heap): a 2 GiB
input no longer ends the agent in MemoryError on a board with 1 GiB of RAM."""


class FrameStream:
    """Frames over two file descriptors, with nothing buffered in Python. ``max_job_bytes``: the
    most a job's input buffers may add up to (``--max-job-bytes``); a bulk frame announcing more
    is read past (never stored) and refused, and the agent goes on."""

    def __init__(
        self, read_fd: int, write_fd: int, max_job_bytes: int = MAX_JOB_INPUT_BYTES
    ) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.max_job_bytes = max_job_bytes

    def _recv_into(self, view: memoryview) -> int:
        return os.readv(self.read_fd, [view])

    def _send(self, data: memoryview) -> int:
        return os.write(self.write_fd, data)

    def _recv_some(self, view: memoryview) -> int:
        """Bytes read into ``view`` (at least one); EOFError when the stream has ended."""
        got = self._recv_into(view)
        if not got:
            raise EOFError("stream ended inside a frame")
        return got

    def _fill(self, view: memoryview, digest: Any) -> bytes:
        """Read exactly ``len(view)`` bytes into ``view`` (a buffer lands where the job reads
        it, with no copy in between), adding each piece to ``digest`` as it lands; its sha256."""
        while view:
            got = self._recv_some(view[:BULK_CHUNK])
            digest.update(view[:got])
            view = view[got:]
        return bytes(digest.digest())

    def _fill_new(self, n: int) -> tuple[Any, bytes]:
        """A buffer of ``n`` bytes read from the stream, and its sha256: in memory up to
        IN_MEMORY_BYTES, else through a file of the jobs folder (a folder of this user's own),
        unlinked at once and mapped copy-on-write (the job may write into its inputs; the file
        never changes). A disk that cannot take it (full, read-only) costs the job nothing: the
        buffer is read into memory instead."""
        fd = self._spill_file(n) if n > IN_MEMORY_BYTES else None
        if fd is None:
            data = bytearray(n)
            return data, self._fill(memoryview(data), hashlib.sha256())
        try:
            digest = hashlib.sha256()
            chunk = bytearray(BULK_CHUNK)
            done = 0
            while done < n:
                got = self._recv_some(memoryview(chunk)[: min(n - done, BULK_CHUNK)])
                piece = memoryview(chunk)[:got]
                digest.update(piece)
                try:
                    while piece:
                        piece = piece[os.write(fd, piece) :]
                except OSError as exc:
                    log.warning("a %d-byte input goes into memory: %s", n, exc)
                    return self._finish_in_memory(fd, n, done, chunk[:got], digest)
                done += got
            return mmap.mmap(fd, n, access=mmap.ACCESS_COPY), digest.digest()
        finally:
            os.close(fd)

    @staticmethod
    def _spill_file(n: int) -> int | None:
        """An unlinked file of the jobs folder for a buffer of ``n`` bytes, or None (the buffer
        goes into memory) when the disk or the folder cannot take one."""
        try:
            os.makedirs(JOBS_FOLDER, mode=0o700, exist_ok=True)
            check_folder(JOBS_FOLDER)
            fd, path = tempfile.mkstemp(prefix=".bulk-", dir=JOBS_FOLDER)
        except (OSError, UnsafeFolder) as exc:
            log.warning("a %d-byte input goes into memory: %s", n, exc)
            return None
        try:
            os.unlink(path)
        except OSError as exc:
            os.close(fd)
            log.warning("a %d-byte input goes into memory: %s", n, exc)
            return None
        return fd

    def _finish_in_memory(
        self, fd: int, n: int, done: int, last: bytearray, digest: Any
    ) -> tuple[bytearray, bytes]:
        """The rest of a buffer whose file the disk stopped taking: what the file holds read
        back, the piece in hand, then the stream's remainder, all in memory."""
        data = bytearray(n)
        view = memoryview(data)
        at = 0
        while at < done:
            got = os.preadv(fd, [view[at:done]], at)
            if not got:
                raise OSError(f"the spilled input ended at {at} of {done} bytes")
            at += got
        view[done : done + len(last)] = last
        return data, self._fill(view[done + len(last) :], digest)

    def _skip(self, n: int) -> None:
        scratch = bytearray(min(n, BULK_CHUNK))
        while n:
            n -= self._recv_some(memoryview(scratch)[: min(n, len(scratch))])

    def _read_exactly(self, n: int, first: bool = False) -> bytes:
        """``n`` bytes; EOFError when the stream ends inside them, except at the ``first`` byte
        of a frame (then b"")."""
        data = bytearray(n)
        view = memoryview(data)
        while view:
            got = self._recv_into(view[: 1 << 20])
            if not got:
                if first and len(view) == n:
                    return b""
                raise EOFError("stream ended inside a frame")
            view = view[got:]
        return bytes(data)

    def read(self) -> Request | None:
        """The next request, or None at end of stream."""
        header = self._read_exactly(FRAME_HEADER.size, first=True)
        if not header:
            return None
        length = frame_length(header)
        if is_bulk(header):
            return self._read_bulk(length)
        if length > MAX_REQUEST_BYTES:
            # Not read: a client cannot make the agent buffer a frame that large.
            raise ValueError(
                f"a request frame of {length} bytes exceeds the cap of {MAX_REQUEST_BYTES}"
            )
        payload = self._read_exactly(length)
        try:
            return Request(decode_frame(payload))
        except ValueError as exc:  # UnicodeDecodeError and JSON errors included
            raise BadFrame(str(exc)) from None

    def _read_bulk(self, length: int) -> Request:
        """A bulk frame: its message (at most a request's size) and its buffers (at most a
        job's inputs), both bounded before anything is read; a message that cannot be read or
        does not add up with the frame's length is refused after the rest of the frame is read
        (bounded too), so the stream stays in step."""
        if length > MAX_BULK_REQUEST_BYTES or length < BULK_PREFIX.size:
            raise ValueError(
                f"a bulk request frame of {length} bytes is outside 4 to {MAX_BULK_REQUEST_BYTES}"
            )
        (message_bytes,) = BULK_PREFIX.unpack(self._read_exactly(BULK_PREFIX.size))
        if message_bytes > min(MAX_REQUEST_BYTES, length - BULK_PREFIX.size):
            raise ValueError(f"a bulk frame's message of {message_bytes} bytes does not fit")
        payload = self._read_exactly(message_bytes)
        rest = length - BULK_PREFIX.size - message_bytes
        try:
            message = decode_frame(payload)
            sizes = bulk_sizes(message, rest)
        except ValueError as exc:
            self._skip(rest)  # the rest of the frame, so the stream stays in step
            raise BadFrame(str(exc)) from None
        if sum(sizes) > self.max_job_bytes:
            self._skip(rest)  # never stored: read past, so the stream stays in step
            raise BadFrame(
                f"a job's input buffers of {sum(sizes)} bytes exceed this agent's cap of "
                f"{self.max_job_bytes} bytes (--max-job-bytes)"
            )
        buffers: list[Any] = []
        ours = []
        for n in sizes:
            buffer, digest = self._fill_new(n)
            buffers.append(buffer)
            ours.append(digest)
        trailer = self._read_exactly(DIGEST_BYTES * len(sizes))
        theirs = [trailer[i : i + DIGEST_BYTES] for i in range(0, len(trailer), DIGEST_BYTES)]
        damaged = tuple(i for i in range(len(ours)) if ours[i] != theirs[i])
        return Request(message, buffers, damaged)

    def write(self, message: Mapping[str, object], buffers: list[memoryview] | None = None) -> None:
        """One frame: a message, or with ``buffers`` a bulk frame carrying them after it."""
        parts: Iterable[memoryview]
        if buffers is None:
            parts = [memoryview(encode_frame(message))]
        else:
            parts = encode_bulk_frame(message, buffers)
        for data in parts:
            while data:
                written = self._send(data)
                data = data[written:]


MIN_BULK_RATE = 1 << 20
"""Bytes a second a client is allowed at the least while it sends a bulk frame: a frame of N
bytes gets ``timeout + N / MIN_BULK_RATE`` seconds in all."""


class SocketFrameStream(FrameStream):
    """Frames over a connected socket. A request has one deadline, from the moment it is
    awaited, for the whole of it: ``timeout`` seconds (a bulk frame ``N / MIN_BULK_RATE`` more),
    however its bytes come, so a client sending a byte a second loses its connection as one
    sending nothing does (a ReadTimeout naming the time that elapsed); a stuck write is a
    socket.timeout (an OSError) after ``timeout`` seconds."""

    def __init__(self, connection: socket.socket, timeout: float, max_job_bytes: int) -> None:
        fd = connection.fileno()
        super().__init__(fd, fd, max_job_bytes)
        self.connection = connection
        self.timeout = timeout
        self._started: float | None = None
        self._deadline: float | None = None
        connection.settimeout(timeout)

    def read(self) -> Request | None:
        self._started = time.monotonic()
        self._deadline = self._started + self.timeout
        try:
            return super().read()
        finally:
            self._started = self._deadline = None
            self.connection.settimeout(self.timeout)  # for the answer's writes

    def _read_bulk(self, length: int) -> Request:
        if self._deadline is not None:
            self._deadline += length / MIN_BULK_RATE
        return super()._read_bulk(length)

    def _arm(self) -> None:
        """The socket's timeout set to what is left of the request's deadline."""
        if self._deadline is None or self._started is None:
            return
        now = time.monotonic()
        if now >= self._deadline:
            raise self._timed_out()
        self.connection.settimeout(self._deadline - now)

    def _timed_out(self) -> ReadTimeout:
        elapsed = time.monotonic() - (self._started or time.monotonic())
        return ReadTimeout(
            f"no complete request within {elapsed:.3g} s "
            f"(the deadline of a request: {self.timeout:g} s)"
        )

    def _recv_into(self, view: memoryview) -> int:
        self._arm()
        try:
            return self.connection.recv_into(view)
        except socket.timeout:  # noqa: UP041 (not yet TimeoutError on Python 3.8)
            raise self._timed_out() from None

    def _send(self, data: memoryview) -> int:
        return self.connection.send(data)


def private_stdio(max_job_bytes: int) -> FrameStream:
    """Take fds 0 and 1 for the frame stream and point the originals at /dev/null and stderr, so
    vendor libraries that read stdin or printf to stdout cannot touch the protocol."""
    frames_in = os.dup(0)
    frames_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return FrameStream(frames_in, frames_out, max_job_bytes)


def own_bundle() -> dict[str, str]:
    """sha256 of every Python file of the bundle as the board has it (this package, and the extra
    adapters the host sent beside it), by its path in the bundle: the host compares them with
    what it deployed, so a cached copy damaged on the board is found and replaced."""
    bundle = os.path.dirname(PACKAGE_DIR)
    names = []
    for top in (os.path.basename(PACKAGE_DIR), EXTRA_ADAPTERS):
        for folder, subfolders, files in os.walk(os.path.join(bundle, top)):
            subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
            relative = os.path.relpath(folder, bundle).replace(os.sep, "/")
            names += [f"{relative}/{n}" for n in sorted(files) if n.endswith(".py")]
    return {name: sha256_file(os.path.join(bundle, name)) for name in names}


def serve(agent: Agent, stream: FrameStream, shutdown_on_eof: bool = True) -> int | None:
    """The serve loop: one answer frame per request. Returns the exit status, or None when
    the stream ended and the agent stays up for the next one (``shutdown_on_eof=False``: a
    connection in listen mode)."""
    try:
        stream.write(
            {
                "op": "hello",
                "protocol": AGENT_PROTOCOL,
                "job_schema": JOB_SCHEMA,
                "result_schema": RESULT_SCHEMA,
                "agent": AGENT_VERSION,
                "pid": os.getpid(),
                "python": platform.python_version(),
                "adapters": available_adapters(agent.adapter_dirs),
                "bundle": own_bundle(),
                # What this agent reads beyond protocol 1.0: jobs and models carried in frames.
                "features": ["framed-jobs", "framed-models"],
            }
        )
        return _serve_requests(agent, stream, shutdown_on_eof)
    except OSError as exc:
        # The host went away (broken pipe): nobody is left to answer.
        log.error("the request stream is lost: %s", exc)
        return _stream_over(agent, shutdown_on_eof, EXIT_FAILED)


def _stream_over(agent: Agent, shutdown_on_eof: bool, status: int) -> int | None:
    """The stream ended: the agent shuts down and leaves with ``status``, except after a
    connection of a listening agent (None: only that connection is over, the agent is fine)."""
    if not shutdown_on_eof:
        return None
    agent.shutdown()  # releases nothing while the runtime thread is stuck in a vendor call
    return status


def _serve_requests(agent: Agent, stream: FrameStream, shutdown_on_eof: bool) -> int | None:
    while True:
        try:
            request = stream.read()
        except (ValueError, EOFError, ReadTimeout) as exc:
            # A BadFrame is a whole frame that is not a request: the stream is still in step. A
            # desynchronised, cut or silent stream cannot be recovered: say so once and leave.
            in_step = isinstance(exc, BadFrame)
            log.error("bad request: %s" if in_step else "bad frame: %s", exc)
            stream.write({"op": "error", "error": failure("ProtocolError", "request", str(exc))})
            if in_step:
                continue
            return _stream_over(agent, shutdown_on_eof, EXIT_FAILED)
        if request is None:
            return _stream_over(agent, shutdown_on_eof, EXIT_OK)
        with agent.lock:
            status = _answer(agent, stream, request)
        if status is not None:
            return status


def _answer(agent: Agent, stream: FrameStream, framed: Request) -> int | None:
    """Answer one request; the exit status when it ends the agent (a shutdown), else None."""
    request = framed.message
    op = request.get("op")
    if op == "job":
        _answer_job(agent, stream, framed)
    elif op == "ping":
        stream.write(
            {
                "op": "ping",
                "pid": os.getpid(),
                "jobs": agent.jobs_run,
                "models": [sha for (_, sha) in agent.models],
                # the SoC the device tree names, for the host's identity check
                "identity": read_identity(),
            }
        )
    elif op == "versions":
        stream.write(_versions_response(agent, request))
        if agent.runtime.stuck:
            abandon(EXIT_TIMEOUT)
    elif op == "model":
        stream.write(answer_model(agent.root, request, framed.buffers, framed.damaged))
    elif op == "memory":
        stream.write({"op": "memory", "memory": read_memory()})
    elif op == "shutdown":
        agent.shutdown()
        stream.write({"op": "shutdown"})
        return EXIT_OK
    else:
        stream.write({"op": op, "error": failure("ProtocolError", "request", f"unknown op {op!r}")})
    return None


def _answer_job(agent: Agent, stream: FrameStream, framed: Request) -> None:
    """A job carried in the frame (its buffers came with it and go back with the answer); after
    a runtime call that timed out, the agent leaves."""
    request = framed.message
    if "job" not in request:
        refused = JobRefused("job", "missing", "a job request carries its document in 'job'")
        stream.write({"op": "job", "error": refused.record()})
        return
    kept = None
    kept_error = None
    if request.get("keep") is not None:
        try:
            kept = new_kept_dir(request["keep"])
        except JobRefused as refused:
            stream.write({"op": "job", "error": refused.record()})
            return
        except OSError as exc:
            # The board's disk cannot take the view (full, read-only): the job runs all the same.
            kept_error = f"{request['keep']}: {exc}"
    inputs = framed.buffers or []
    result, status, buffers = agent.run_job(request["job"], inputs, framed.damaged)
    if kept is not None:
        failed = write_kept_view(kept, request["job"], inputs, result, buffers)
        if failed is not None:
            kept_error = f"{kept}: {failed}"
    restart = agent.runtime.stuck
    answer = {"op": "job", "result": result, "status": status, "restart": restart}
    if kept_error is not None:
        log.error("could not keep job %s's files: %s", result["job_id"], kept_error)
        answer["kept_error"] = kept_error
    stream.write(answer, buffers or None)  # a plain frame when no buffer goes back
    if restart:
        # The runtime thread is stuck in a vendor call that cannot be interrupted.
        log.error("a runtime call timed out; ending the agent so the host restarts it")
        abandon(EXIT_TIMEOUT)


def _versions_response(agent: Agent, request: Mapping[str, object]) -> dict[str, object]:
    name = request.get("adapter")
    options = request.get("options") or {}
    refused = None
    if not isinstance(name, str) or not is_adapter_name(name):
        refused = f"adapter: {name!r} is not an adapter name"
    elif name not in available_adapters(agent.adapter_dirs):
        refused = f"adapter: {name!r} is not an adapter on this board"
    elif not isinstance(options, dict):
        refused = "options: expected an object"
    if refused is not None:
        return {"op": "versions", "error": failure("JobError", "validate", refused)}
    assert isinstance(name, str) and isinstance(options, dict)  # checked just above
    try:
        return {
            "op": "versions",
            "versions": agent.versions(name, options, DEFAULT_TIMEOUTS["load"]),
        }
    except StageFailed as failed:
        return {"op": "versions", "error": failed.record, "restart": agent.runtime.stuck}


# The listener loop.


def _answers(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


def bind_socket(path: str) -> socket.socket:
    """A listening Unix stream socket at ``path`` that only this user can connect to. A socket
    file left by an agent that died is removed first; a live one, or a path that is not a socket,
    is refused (OSError)."""
    try:
        mode: int | None = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None:
        if not stat.S_ISSOCK(mode):
            raise OSError(f"{path} exists and is not a socket")
        if _answers(path):
            raise OSError(f"another agent listens at {path}")
        remove_socket(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # A umask rather than a chmod after bind: there is no moment at which others may connect.
    previous = os.umask(0o177)
    try:
        server.bind(path)
        server.listen(4)
    except OSError:
        server.close()
        raise
    finally:
        os.umask(previous)
    return server


def listen(
    agent: Agent,
    path: str,
    idle_timeout: float,
    read_timeout: float,
    max_connections: int,
    max_job_bytes: int,
) -> int:
    """Serve connections at ``path`` until a shutdown request, a fatal error or ``idle_timeout``
    seconds without a connection (the rules: the page's Listening); the socket is removed on the
    way out. Their requests take turns (``agent.lock``)."""
    try:
        server = bind_socket(path)
    except OSError as exc:
        log.error("cannot listen at %s: %s", path, exc)
        agent.shutdown()
        return EXIT_FAILED
    LISTENING.append(path)
    log.info("listening at %s", path)
    try:
        shared = _Connections()
        server.settimeout(min(idle_timeout, _ACCEPT_POLL_S))
        while not shared.done.is_set():
            try:
                connection, _ = server.accept()
            # Not TimeoutError: on Python 3.8 socket.timeout is not yet an alias of it.
            except socket.timeout:  # noqa: UP041
                with shared.lock:
                    idle = (
                        shared.active == 0 and time.monotonic() - shared.last_seen >= idle_timeout
                    )
                if idle and not shared.done.is_set():
                    log.info("no connection for %g s: exiting", idle_timeout)
                    agent.shutdown()
                    return EXIT_OK
                continue
            with shared.lock:
                busy = shared.active >= max_connections
                if not busy:
                    shared.active += 1
            if busy:
                _refuse_connection(connection, max_connections)
                continue
            worker = threading.Thread(
                target=_serve_connection,
                args=(agent, connection, shared, read_timeout, max_job_bytes),
                name="npu-hil-connection",
                daemon=True,
            )
            worker.start()
        return EXIT_OK if shared.status is None else shared.status
    finally:
        server.close()
        remove_socket(path)
        LISTENING.remove(path)


class _Connections:
    """What the accept loop and the connection threads share."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.last_seen = time.monotonic()
        self.status: int | None = None
        self.done = threading.Event()


# How often the accept loop looks up from accept(): for a shutdown asked on a connection thread.
_ACCEPT_POLL_S = 0.2


def _serve_connection(
    agent: Agent,
    connection: socket.socket,
    shared: _Connections,
    read_timeout: float,
    max_job_bytes: int,
) -> None:
    status: int | None = None
    try:
        with connection:
            status = serve(
                agent,
                SocketFrameStream(connection, read_timeout, max_job_bytes),
                shutdown_on_eof=False,
            )
            _drain(connection)
    except Exception as exc:  # one connection's trouble must not end the agent
        log.error("connection failed: %s", traceback_tail(exc))
    finally:
        with shared.lock:
            shared.active -= 1
            shared.last_seen = time.monotonic()
            if status is not None:
                shared.status = status
                shared.done.set()


def _refuse_connection(connection: socket.socket, max_connections: int) -> None:
    message = f"the agent already serves {max_connections} connections; try again"
    log.warning("connection refused: %s", message)
    with connection, contextlib.suppress(OSError):
        connection.settimeout(5.0)
        connection.sendall(
            encode_frame({"op": "error", "error": failure("ProtocolError", "request", message)})
        )


def _drain(connection: socket.socket) -> None:
    """Read what the peer sent and nobody will read: closing a Unix socket with unread input
    resets the connection, and the peer could lose the answers still queued for it (the error
    that says why a garbled connection ends, for one)."""
    connection.setblocking(False)
    with contextlib.suppress(OSError):
        while connection.recv(1 << 16):
            pass
