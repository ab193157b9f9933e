"""Reaching a real board: its inventory transport opened and proven at once, so an unreachable
board is a :class:`TransportError` while the farm can still fall back to a simulated one, not
halfway through the first test."""

from __future__ import annotations

import sys
from pathlib import Path

from npu_hil.harness.errors import TransportError
from npu_hil.harness.farm.inventory import Board
from npu_hil.harness.transport.base import BOARD_PYTHON, BOARD_WORKDIR, Transport
from npu_hil.harness.transport.config import LocalConfig


def connect(board: Board, local_workdir: Path) -> Transport:
    """The board's transport, connected and checked with a trivial command.

    ``local_workdir`` is the board's folder under the farm; it is the remote workdir only for a
    ``local`` board without one of its own (the harness runs on the board itself).
    """
    config = board.transport
    if isinstance(config, LocalConfig):
        workdir = Path(board.workdir) if board.workdir else local_workdir / "remote"
        return config.open(
            workdir=workdir,
            python=board.python or sys.executable,
            connect_timeout=board.timeouts.connect,
        )
    try:
        transport = config.open(
            workdir=board.workdir or BOARD_WORKDIR,
            python=board.python or BOARD_PYTHON,
            connect_timeout=board.timeouts.connect,
        )
        _prove(board, transport)
    except (TransportError, ValueError) as exc:
        # One prefix, whichever step failed: the report must say which board could not be reached.
        message = exc.message if isinstance(exc, TransportError) else str(exc)
        raise TransportError(f"{board.name}: {message}") from None
    return transport


def _prove(board: Board, transport: Transport) -> None:
    try:
        prove = getattr(transport, "prove", None)
        if callable(prove):
            # A transport that proves its link by itself (SSH: the connection and its workdir
            # probe through the shell) spares the board a process of its own for `true`.
            prove()
            return
        done = transport.run(["true"], timeout=board.timeouts.connect)
        if done.returncode != 0:
            raise TransportError(
                "the board's shell answered `true` with exit status "
                f"{done.returncode}: {done.stderr.decode(errors='replace').strip()[:200]}"
            )
    except TransportError:
        close_transport(transport)
        raise


def close_transport(transport: Transport) -> None:
    """Close a transport that holds a connection (SSH, serial); a local one holds none."""
    close = getattr(transport, "close", None)
    if callable(close):
        close()
