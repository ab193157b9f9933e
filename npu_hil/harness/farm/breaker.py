"""A per-board circuit breaker: a board whose infrastructure failed N times in a row is taken out.

Every model run on a board reports to the board's breaker: an infrastructure failure
(TransportError, a killed agent, a timeout) counts one, anything that reached the board's runtime
and came back (a result, a DeviceError, a buffer mismatch) resets the count. At ``threshold``
failures in a row the breaker opens: every later run on that board raises
:class:`BoardBrokenError` at once with the cause, so a full disk or a dead board costs N
attempts, not every test's retries. Other boards have breakers of their own. A power cycle
closes it again (:meth:`npu_hil.harness.farm.Farm.power_cycle`): the board gets a fresh start.

A breaker given a :class:`~npu_hil.harness.farm.breaker_file.BreakerFile` (the farm's are) counts
for the whole run: the failures in a row and the open breaker live in that file, so the
pytest-xdist workers of one run count one board's failures together, and a board one worker
found dead is refused at once by the others.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from npu_hil.harness.errors import NpuHilError, TransportError
from npu_hil.harness.farm.breaker_file import MAX_FAILURES, BreakerFile, BreakerState
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
    (or 0) never opens it. Thread-safe: the counts may be shared by a session's copies, and with
    ``shared`` by the run's other processes."""

    board: str
    threshold: int | None = DEFAULT_THRESHOLD
    failures: list[str] = field(default_factory=list)  # the current run of failures, in order
    opened: str | None = None  # the message every later run gets, once open
    infra_errors: int = 0  # every infrastructure failure counted here, never reset: "since when"
    # told the message when the breaker opens (the farm keeps it across runs)
    on_open: Callable[[str], None] | None = field(default=None, repr=False, compare=False)
    # where the run's processes keep what they learned together (None: this process alone)
    shared: BreakerFile | None = field(default=None, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def is_open(self) -> bool:
        self._sync()
        return self.opened is not None

    def check(self) -> None:
        """BoardBrokenError when the breaker is open (here or in another process of the run);
        nothing otherwise."""
        self._sync()
        with self._lock:
            opened, cause = self.opened, (self.failures[-1] if self.failures else "")
        if opened is not None:
            raise BoardBrokenError(opened, board=self.board, cause=cause)

    def failed(self, exc: BaseException) -> bool:
        """Count an infrastructure failure; True when this one opened the breaker."""
        if isinstance(exc, BoardBrokenError) or not isinstance(exc, INFRA_FAILURES):
            return False
        message = exc.message if isinstance(exc, NpuHilError) else str(exc)
        failure = f"{type(exc).__name__}: {message}"
        with self._lock:
            self.infra_errors += 1
        opened_now = False

        def count(state: BreakerState) -> BreakerState:
            nonlocal opened_now
            failures = (*state.failures, failure)[-MAX_FAILURES:]
            opened = state.opened
            if opened is None and self.threshold and len(failures) >= self.threshold:
                opened, opened_now = self._message(failures), True
            return BreakerState(failures, opened)

        # The run's count when there is one (under its file lock), else this process's.
        state = self._shared_update(count)
        if state is None:
            with self._lock:
                opened_now = False
                state = count(BreakerState(tuple(self.failures), self.opened))
                self.failures[:], self.opened = state.failures, state.opened
        else:
            self._take(state)
        if opened_now and self.on_open is not None:
            self.on_open(state.opened or "")
        return opened_now

    def succeeded(self) -> None:
        """The board answered: the run of failures is over."""
        state = self._shared_look()
        if state is not None and state.failures and state.opened is None:
            # Written only when there is a run of failures to end: a passing job costs a stat.
            state = self._shared_update(lambda now: now if now.opened else BreakerState())
        if state is not None:
            self._take(state)
            return
        with self._lock:
            if self.opened is None:
                self.failures.clear()

    def reset(self) -> None:
        """Close the breaker (after a power cycle, the board starts afresh), for the whole run."""
        self._shared_update(lambda _: BreakerState())
        with self._lock:
            self.failures.clear()
            self.opened = None

    def _message(self, failures: tuple[str, ...]) -> str:
        return (
            f"board {self.board} is marked unhealthy: its infrastructure failed "
            f"{len(failures)} times in a row (circuit breaker, threshold "
            f"{self.threshold}); last: {failures[-1]}"
        )

    def _sync(self) -> None:
        """Take what the run's other processes learned (one stat when the file is unchanged)."""
        state = self._shared_look()
        if state is not None:
            self._take(state)

    def _take(self, state: BreakerState) -> None:
        with self._lock:
            self.failures[:] = state.failures
            self.opened = state.opened

    def _shared_look(self) -> BreakerState | None:
        return self.shared.look() if self.shared is not None and self.threshold else None

    def _shared_update(self, change: Callable[[BreakerState], BreakerState]) -> BreakerState | None:
        if self.shared is None or not self.threshold:
            return None
        return self.shared.update(change)
