"""Is the board the SoC the inventory says? The health check's identity step.

A real board's agent reports its device tree's root ``compatible`` strings with every ping
(:mod:`npu_hil.harness.board.identity`); the vendor units' tables say which strings each target
reports (:mod:`npu_hil.targets.identity`). A board naming another target's SoC is a
:class:`BoardIdentityError` naming both: infrastructure (the inventory or the wiring is wrong),
which no power cycle mends. A simulated board reports the target it simulates (its runtime's
``target`` version field). Anything that cannot be told is ``unknown``: a warning in the
board's health history, never a refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from npu_hil.harness.errors import TransportError
from npu_hil.targets.identity import IdentityVerdict, judge_identity

__all__ = ["BoardIdentityError", "board_identity", "identity_error"]


class BoardIdentityError(TransportError):
    """The board reports another SoC than its inventory target (both are named)."""


def board_identity(
    board: str,
    target: str,
    *,
    simulated: bool,
    ping: Mapping[str, Any],
    versions: Mapping[str, Any],
) -> IdentityVerdict:
    """The verdict for one board from its ping answer and runtime versions."""
    if simulated:
        reported = str(versions.get("target") or "")
        if reported == target:
            return IdentityVerdict("match", (reported,), f"a simulated {target}")
        return IdentityVerdict(
            "mismatch",
            (reported,),
            f"the inventory says {target}, but the simulated runtime runs {reported or 'nothing'}",
            reported or None,
        )
    found = ping.get("identity")
    if not isinstance(found, Mapping):
        return IdentityVerdict("unknown", (), "the agent reported no identity")
    source = str(found.get("source") or "/proc/device-tree/compatible")
    if found.get("error"):
        return IdentityVerdict("unknown", (), f"{source}: unreadable: {found['error']}")
    strings = found.get("compatible")
    compatible = [str(s) for s in strings] if isinstance(strings, list) else []
    return judge_identity(target, compatible, source=source)


def identity_error(board: str, verdict: IdentityVerdict) -> BoardIdentityError:
    return BoardIdentityError(f"board {board} is not the SoC its inventory says: {verdict.detail}")
