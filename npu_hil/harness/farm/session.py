"""A board session: one board's transport and agent client, and whether it is really simulated:
what a test holds and :func:`npu_hil.harness.pipeline.run_model` runs on. A real board's
inventory transport is opened and proven at once (:func:`connect`), so an unreachable board is a
:class:`TransportError` while the farm can still fall back to a simulated one, not halfway
through the first test."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.errors import TransportError
from npu_hil.harness.farm.breaker import CircuitBreaker
from npu_hil.harness.farm.inventory import Board
from npu_hil.harness.farm.recovery import RetryPolicy
from npu_hil.harness.models import Manifest, load_manifest
from npu_hil.harness.transport.base import Transport
from npu_hil.harness.transport.config import LocalConfig
from npu_hil.harness.transport.defaults import BOARD_PYTHON, BOARD_WORKDIR

log = logging.getLogger(__name__)


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


@dataclass
class BoardSession:
    """A board ready to run jobs.

    ``simulated`` is True for a simulated board and for a real one the farm replaced by a
    simulated board (``fallback_reason`` then says why), so reports never confuse the two.
    ``adapter`` and ``adapter_options`` are what every job on this session names.
    ``breaker`` is the board's circuit breaker (shared by copies of the session) and ``retry``
    the farm's retry policy: :func:`npu_hil.harness.pipeline.run_model` consults and feeds the one
    and follows the other.
    """

    board: Board
    transport: Transport
    client: AgentClient
    simulated: bool
    adapter: str
    adapter_options: dict[str, Any]
    workdir: Path
    fallback_reason: str | None = None
    manifest_path: Path | None = None
    _manifest: Manifest | None = field(default=None, repr=False)
    breaker: CircuitBreaker | None = field(default=None, repr=False)
    retry: RetryPolicy = field(default_factory=RetryPolicy, repr=False)

    def __post_init__(self) -> None:
        if self.breaker is None:
            self.breaker = CircuitBreaker(self.board.name)

    @property
    def manifest(self) -> Manifest | None:
        """The model manifest (read on first use: a simulated board never needs it, so a broken
        manifest must not keep one from running), or None when the inventory names none."""
        if self._manifest is None and self.manifest_path is not None:
            self._manifest = load_manifest(self.manifest_path)
        return self._manifest

    @property
    def target(self) -> str:
        return self.board.target

    @property
    def name(self) -> str:
        return self.board.name

    def restart(self) -> None:
        """Start over with a fresh agent: the old session is shut down (killed if it does not
        answer) and the next job starts a new one. Use after a hang or a power cycle."""
        log.info("restarting the agent on %s", self.board.name)
        # The client itself stays: copies of this session (dataclasses.replace with other
        # adapter options) share it, and it starts a new agent with the next request.
        self.client.close(timeout=5.0)

    def close(self) -> None:
        """End the agent, then drop the link (an SSH connection, an open serial port)."""
        try:
            self.client.close()
        finally:
            close_transport(self.transport)

    @property
    def transport_kind(self) -> str:
        """How the jobs reach the board: ``local``, ``ssh`` or ``serial`` (a simulated board and
        a fallback run locally)."""
        return "local" if self.fallback_reason is not None else self.board.transport.kind

    def take_events(self) -> list[str]:
        """What the agent client found damaged on the board and mended since the last call
        (a model copied again), for the report; taken, so each is reported once."""
        take = getattr(self.client, "take_events", None)
        return list(take()) if callable(take) else []

    def take_boot_log(self) -> str:
        """What the board printed while it rebooted since the last call (serial consoles keep
        it), or ``""``; taken, so each report shows a boot once."""
        take = getattr(self.transport, "take_boot_log", None)
        return str(take()) if callable(take) else ""
