"""Recovery and retry policy, the same from a script as under pytest: power control (the
inventory's commands, argv lists never given to a shell, with a timeout, or a labgrid place's
power resource; every failure a TransportError, infrastructure), the health check's power cycle,
the retries every session carries, and the board events' texts (docs/farm/health.md, "Retries,
power cycles and the circuit breaker")."""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from npu_hil.harness.errors import NpuHilError, TransportError
from npu_hil.harness.farm.breaker import INFRA_FAILURES, BoardBrokenError, describe
from npu_hil.harness.farm.defaults import DEFAULT_BACKOFF_S, DEFAULT_RETRIES
from npu_hil.targets.identity import IdentityVerdict, judge_identity

if TYPE_CHECKING:
    from npu_hil.harness.farm.inventory import Board
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


T = TypeVar("T")


@dataclass(frozen=True)
class Health:
    """A board's health, checked once per farm (and again after infrastructure errors):
    reachable (ping), its runtime versions, its SoC identity (``identity``: the verdict's
    dict) and the golden job's note (``golden``). ``recoverable`` is False for what no power
    cycle mends (a board that is another SoC than its inventory says)."""

    ok: bool
    versions: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    simulated: bool = False
    fallback_reason: str | None = None
    identity: Mapping[str, Any] = field(default_factory=dict)
    golden: str = ""
    recoverable: bool = True


class BoardUnhealthyError(NpuHilError):
    """A board failed its health check (after a power cycle when it has power control): its
    runs are errors with this cause, the other boards go on."""


@dataclass(frozen=True)
class RetryPolicy:
    """``retries`` further attempts of a model run after an infrastructure failure, the first
    after ``backoff_s`` seconds, each further one after twice the wait before it."""

    retries: int = DEFAULT_RETRIES
    backoff_s: float = DEFAULT_BACKOFF_S

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise NpuHilError(f"retries must be 0 or more, got {self.retries}")
        if self.backoff_s < 0:
            raise NpuHilError(f"backoff_s must be 0 or more, got {self.backoff_s}")

    def delay(self, attempt: int) -> float:
        """Seconds before retry number ``attempt + 1``."""
        return float(self.backoff_s * 2**attempt)

    def run(
        self,
        attempt: Callable[[], T],
        *,
        restart: Callable[[], None],
        on_retry: Callable[[str], None] | None = None,
    ) -> T:
        """``attempt()``, again after each retryable failure while retries are left (``restart``
        called before each, ``on_retry`` told what the retry is paid for); the last failure, or
        a BoardBrokenError at once, reaches the caller."""
        done = 0
        while True:
            try:
                return attempt()
            except INFRA_FAILURES as exc:  # what a retry is paid for
                # An open breaker was opened by this failure or an earlier one: no retry is
                # paid for it.
                if isinstance(exc, BoardBrokenError) or done >= self.retries:
                    raise
                if on_retry is not None:
                    on_retry(describe(exc))
                time.sleep(self.delay(done))
                done += 1
                restart()


NO_RETRY = RetryPolicy(retries=0)


@dataclass
class BoardCondition:
    """What the health check found and did for one board: ``problem`` (None when healthy), the
    ``events`` a report shows (a power cycle that brought it back), the ``boot_log`` of an
    unhealthy board (why it is unhealthy is often in what its console printed)."""

    problem: str | None = None
    events: list[str] = field(default_factory=list)
    boot_log: str = ""
    errors_seen: int = 0  # the breaker's infra_errors when checked: more since, check again


class _Checks(Protocol):
    """What :func:`health_problem` needs of the farm."""

    def health(self, board: Board) -> Health: ...

    def power_cycle(self, board: Board) -> None: ...


def health_problem(farm: _Checks, board: Board, events: list[str]) -> str | None:
    """None when the board is healthy, or came back after a power cycle (``events`` then says
    so); else why it is unhealthy."""
    try:
        health = farm.health(board)
    except NpuHilError as exc:
        first = describe(exc)
    else:
        if health.ok:
            return None
        first = health.error or "unhealthy"
        if not getattr(health, "recoverable", True):  # no power cycle mends it
            return f"board {board.name} is unhealthy: {first}"
    if board.power is None:
        return f"board {board.name} is unhealthy: {first} (no power control to recover it)"
    try:
        farm.power_cycle(board)
        again = farm.health(board)
    except NpuHilError as exc:
        return f"board {board.name} is unhealthy: {first}; power cycle failed: {exc.message}"
    if again.ok:
        events.append(f"power cycled: {first}; healthy again")
        return None
    return (
        f"board {board.name} is unhealthy: {first}; still unhealthy after a power cycle: "
        f"{again.error or 'unhealthy'}"
    )


class BoardIdentityError(TransportError):
    """The board reports another SoC than its inventory target (both are named)."""


def board_identity(
    target: str,
    *,
    simulated: bool,
    ping: Mapping[str, Any],
    versions: Mapping[str, Any],
) -> IdentityVerdict:
    """The verdict for one board from its ping answer (its device tree's root ``compatible``)
    and runtime versions (a simulated board's ``target``); what cannot be told is ``unknown``:
    a warning in the board's history, never a refusal."""
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


def unreachable_event(message: str) -> str:
    """The board event of a run that met an unhealthy board."""
    return f"unreachable: {message}"


def breaker_event(message: str) -> str:
    """The board event of a board its circuit breaker marked unhealthy (one text for every run
    it met, so the report counts them)."""
    return f"circuit breaker open: {message}"


def fallback_event(reason: str) -> str:
    """The board event of a real board that ran simulated instead."""
    return f"fell back to a simulated board: {reason}"
