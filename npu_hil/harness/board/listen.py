"""The listener loop: the serve loop on a Unix socket, for a board whose link cannot hold a byte
stream open beside its control shell (``docs/runtime/agent.md``, Listening, and the relay).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import stat
import threading
import time

from .agent import Agent
from .cache import traceback_tail
from .serve import LISTENING, SocketFrameStream, remove_socket, serve
from .wire import EXIT_FAILED, EXIT_OK, encode_frame, failure

log = logging.getLogger("npu-hil-agent")


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
    seconds without a connection (the rules: the module's page); the socket is removed on the
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
