"""Reaching a real board: its inventory transport built and proven to work.

Separate from :mod:`harness.farm.farm` because this is the one place that knows how an inventory
``transport`` entry becomes an :class:`~harness.transport.ssh.SshTransport` or
:class:`~harness.transport.serial_console.SerialTransport`; the farm only decides *whether* a
board is reached this way or simulated.

A transport is proven at once (a trivial command runs there): an unreachable board must show up
as a :class:`TransportError` while the farm can still fall back to a simulated one, not halfway
through the first test.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

from npu_hil.harness.errors import TransportError
from npu_hil.harness.farm.inventory import Board
from npu_hil.harness.transport.base import Transport
from npu_hil.harness.transport.local import LocalTransport

__all__ = ["DEFAULT_REMOTE_WORKDIR", "close_transport", "connect"]

DEFAULT_REMOTE_WORKDIR = "/tmp/npu-hil"
"""Where the agent, the model cache and the jobs live on a board whose inventory names no
workdir: a tmpfs on most boards, so a reboot leaves nothing behind."""
DEFAULT_REMOTE_PYTHON = "python3"


def connect(board: Board, local_workdir: Path) -> Transport:
    """The board's transport, connected and checked with a trivial command.

    ``local_workdir`` is the board's folder under the farm; it is the remote workdir only for a
    ``local`` board without one of its own (the harness runs on the board itself).
    """
    config = board.transport
    if config.kind == "local":
        workdir = Path(board.workdir) if board.workdir else local_workdir / "remote"
        return LocalTransport(workdir, python=board.python or sys.executable)
    try:
        transport = _open(board)
        _prove(board, transport)
    except (TransportError, ValueError) as exc:
        # One prefix, whichever step failed: the report must say which board could not be reached.
        message = exc.message if isinstance(exc, TransportError) else str(exc)
        raise TransportError(f"{board.name}: {message}") from None
    return transport


def _open(board: Board) -> Transport:
    config = board.transport
    workdir = board.workdir or DEFAULT_REMOTE_WORKDIR
    python = board.python or DEFAULT_REMOTE_PYTHON
    if config.kind == "ssh":
        # Imported here: paramiko is heavy, and a farm of simulated boards never needs it.
        from npu_hil.harness.transport.ssh import SshTransport

        assert config.host is not None  # the inventory refuses an ssh entry without a host
        port = config.port if isinstance(config.port, int) else 22
        policy: Literal["strict", "accept-new"] = (
            "accept-new" if config.host_key_policy == "accept-new" else "strict"
        )
        return SshTransport(
            config.host,
            port,
            config.user,
            workdir=workdir,
            python=python,
            key_file=config.key_file,
            known_hosts=config.known_hosts,
            host_key_policy=policy,
            connect_timeout=board.timeouts.connect,
        )
    if config.kind == "serial":
        from npu_hil.harness.transport.serial_console import SerialTransport

        return SerialTransport(
            str(config.port),
            workdir=workdir,
            baudrate=config.baudrate or 115200,
            user=config.user,
            password_env=config.password_env,
            python=python,
            connect_timeout=board.timeouts.connect,
        )
    raise TransportError(f"unknown transport kind {config.kind!r}")  # the inventory refuses it


def _prove(board: Board, transport: Transport) -> None:
    try:
        done = transport.run(["true"], timeout=board.timeouts.connect)
    except TransportError:
        close_transport(transport)
        raise
    if done.returncode != 0:
        close_transport(transport)
        raise TransportError(
            "the board's shell answered `true` with exit status "
            f"{done.returncode}: {done.stderr.decode(errors='replace').strip()[:200]}"
        )


def close_transport(transport: Transport) -> None:
    """Close a transport that holds a connection (SSH, serial); a local one holds none."""
    close = getattr(transport, "close", None)
    if callable(close):
        close()
