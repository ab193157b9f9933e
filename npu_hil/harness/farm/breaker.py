"""A per-board circuit breaker: a board whose infrastructure failed N times in a row is taken out.

Every model run on a board reports to the board's breaker: an infrastructure failure
(TransportError, a killed agent, a timeout) counts one, anything that reached the board's runtime
and came back (a result, a DeviceError, a buffer mismatch) resets the count. At ``threshold``
failures in a row the breaker opens: every later run on that board raises
:class:`BoardBrokenError` at once with the cause, so a full disk or a dead board costs N
attempts, not every test's retries. Other boards have breakers of their own. A power cycle
closes it again (:meth:`npu_hil.harness.farm.Farm.power_cycle`): the board gets a fresh start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from npu_hil.harness.errors import NpuHilError, TransportError
from npu_hil.harness.farm.defaults import DEFAULT_THRESHOLD

__all__ = ["DEFAULT_THRESHOLD", "INFRA_FAILURES", "BoardBrokenError", "CircuitBreaker"]

INFRA_FAILURES: tuple[type[BaseException], ...] = (TransportError, TimeoutError)
"""What counts as the board's infrastructure failing (the plugin's retryable errors)."""


class BoardBrokenError(TransportError):
    """A board whose circuit breaker is open: its infrastructure failed ``threshold`` times in a
    row, the last cause is in the message. Infrastructure (a TransportError: an *error* of the
    test), but never retried: that is the point."""

    def __init__(self, message: str, *, board: str, cause: str) -> None:
        super().__init__(message)
        self.board = board
        self.cause = cause


@dataclass
class CircuitBreaker:
    """One board's breaker. ``threshold`` consecutive infrastructure failures open it; None
    (or 0) never opens it. Thread-safe: the counts may be shared by a session's copies."""

    board: str
    threshold: int | None = DEFAULT_THRESHOLD
    failures: list[str] = field(default_factory=list)  # the current run of failures, in order
    opened: str | None = None  # the message every later run gets, once open
    infra_errors: int = 0  # every infrastructure failure counted, never reset: "since when"
    # told the message when the breaker opens (the farm keeps it across runs)
    on_open: Callable[[str], None] | None = field(default=None, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def is_open(self) -> bool:
        return self.opened is not None

    def check(self) -> None:
        """BoardBrokenError when the breaker is open; nothing otherwise."""
        if self.opened is not None:
            raise BoardBrokenError(self.opened, board=self.board, cause=self.failures[-1])

    def failed(self, exc: BaseException) -> bool:
        """Count an infrastructure failure; True when this one opened the breaker."""
        if isinstance(exc, BoardBrokenError) or not isinstance(exc, INFRA_FAILURES):
            return False
        message = exc.message if isinstance(exc, NpuHilError) else str(exc)
        with self._lock:
            self.infra_errors += 1
            self.failures.append(f"{type(exc).__name__}: {message}")
            del self.failures[:-50]  # a breaker that never opens keeps a bounded history
            if self.opened is not None or not self.threshold:
                return False
            if len(self.failures) < self.threshold:
                return False
            self.opened = opened = (
                f"board {self.board} is marked unhealthy: its infrastructure failed "
                f"{len(self.failures)} times in a row (circuit breaker, threshold "
                f"{self.threshold}); last: {self.failures[-1]}"
            )
        if self.on_open is not None:
            self.on_open(opened)
        return True

    def succeeded(self) -> None:
        """The board answered: the run of failures is over."""
        with self._lock:
            if self.opened is None:
                self.failures.clear()

    def reset(self) -> None:
        """Close the breaker (after a power cycle, the board starts afresh)."""
        with self._lock:
            self.failures.clear()
            self.opened = None
