"""Power control of a board: the inventory's commands (argv lists, never a shell) with a timeout,
or a labgrid place's power resource. Every failure is a TransportError (infrastructure)."""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from npu_hil.harness.errors import TransportError
from npu_hil.harness.farm.inventory import Board

if TYPE_CHECKING:
    from npu_hil.harness.farm.labgrid_boards import FarmPlaces

log = logging.getLogger(__name__)


OFF_ON_PAUSE_S = 2.0
"""Between off and on, so the board really loses power (capacitors, PDU relays)."""


def run_power_command(board: Board, argv: Sequence[str], what: str) -> None:
    """Run one power command; TransportError when it fails or does not end in time."""
    timeout = board.timeouts.power
    log.info("%s: power %s: %s", board.name, what, " ".join(argv))
    try:
        done = subprocess.run(
            list(argv), capture_output=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise TransportError(
            f"{board.name}: power {what} ({argv[0]}) did not end within {timeout:.0f} s"
        ) from None
    except OSError as exc:
        raise TransportError(f"{board.name}: power {what}: cannot run {argv[0]!r}: {exc}") from None
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", errors="replace").strip()[-2000:]
        raise TransportError(
            f"{board.name}: power {what} ({argv[0]}) ended with exit status {done.returncode}: "
            f"{stderr or '(nothing on stderr)'}"
        )


def power_cycle(
    board: Board, *, pause_s: float = OFF_ON_PAUSE_S, labgrid: FarmPlaces | None = None
) -> None:
    """Cut and restore the board's power: its ``cycle`` command, else ``off`` then ``on``; for
    ``power: {labgrid: place}`` the place's power resource through ``labgrid``."""
    power = board.power
    if power is None:
        raise TransportError(f"{board.name}: no power control in the inventory")
    if power.labgrid is not None:
        if labgrid is None:
            raise TransportError(
                f"{board.name}: power control through labgrid place {power.labgrid!r} needs the "
                "farm's labgrid connection (Farm.power_cycle)"
            )
        log.info("%s: power cycle through labgrid place %s", board.name, power.labgrid)
        # LabgridError is a TransportError: a failing PDU is infrastructure like a failing command.
        labgrid.power(power.labgrid, "cycle", delay=pause_s)
        return
    if power.cycle is not None:
        run_power_command(board, power.cycle, "cycle")
        return
    assert power.off is not None and power.on is not None  # the inventory guarantees one form
    run_power_command(board, power.off, "off")
    time.sleep(pause_s)
    run_power_command(board, power.on, "on")
