"""A per-board circuit breaker: N infrastructure failures in a row take a board out until a
power cycle, counted for the whole run through a :class:`BreakerFile` (docs/farm/health.md,
"Retries, power cycles and the circuit breaker")."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from npu_hil.harness.errors import NpuHilError, TransportError
from npu_hil.harness.farm.defaults import DEFAULT_THRESHOLD
from npu_hil.harness.farm.health_store import board_file, distrust, utc_now, write_private
from npu_hil.harness.files import read_json
from npu_hil.harness.folders import private_dir

log = logging.getLogger(__name__)

SCHEMA = 1
MAX_RUNS = 8
"""Runs kept per board: the concurrent runs of one host, with room to spare."""
MAX_FAILURES = 50
"""Failures kept per run: as many as a breaker in memory keeps."""
MAX_TEXT = 1000
"""Characters kept of one failure or message (the file stays a few hundred KiB at most)."""
MAX_BYTES = 1 << 20
LOCK_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class BreakerState:
    """One run's breaker for one board: the failures in a row (oldest first) and, once open,
    the message every later run gets."""

    failures: tuple[str, ...] = ()
    opened: str | None = None
    time: str = ""  # when it was last written (UTC): the runs written last are the ones kept


_EMPTY = BreakerState()


class BreakerFile:
    """The shared breaker state of ``board`` for the run ``run_id``, in ``folder``: rewritten
    whole under a file lock, read without it only when it changed (one ``stat`` before a job)."""

    def __init__(self, folder: str | os.PathLike[str], board: str, run_id: str) -> None:
        self.folder = Path(folder)
        self.path = board_file(self.folder, board, ".breaker.json", "a circuit breaker file")
        self.board = board
        self.run_id = run_id
        self.problem: str | None = None  # why it is not used (then the breaker is per process)
        self._seen: tuple[int, ...] | None = None
        self._state = _EMPTY
        self._damage: str | None = None  # the damage last warned of
        self._lock = threading.Lock()

    def look(self) -> BreakerState | None:
        """This run's state as the file has it now; None when the file is not to be used."""
        with self._lock:
            if self.problem is not None:
                return None
            try:
                info = os.lstat(self.path)
            except FileNotFoundError:
                self._seen, self._state = None, _EMPTY
                return _EMPTY
            except OSError as exc:
                self._give_up(f"{self.path}: {exc.strerror or exc}")
                return None
            seen = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            if seen != self._seen:
                runs = self._load(info)
                if runs is None:
                    return None
                self._seen, self._state = seen, runs.get(self.run_id, _EMPTY)
            return self._state

    def update(self, change: Callable[[BreakerState], BreakerState]) -> BreakerState | None:
        """This run's state after ``change`` (given the state as stored), written for the other
        processes; None when the file is not to be used (``problem`` says why)."""
        with self._lock:
            if self.problem is not None:
                return None
            try:
                private_dir(self.folder)
                with FileLock(f"{self.path}.lock", timeout=LOCK_TIMEOUT_S):
                    runs = self._stored()
                    if runs is None:
                        return None
                    state = dataclasses.replace(
                        change(runs.get(self.run_id, _EMPTY)),
                        time=utc_now(),
                    )
                    runs[self.run_id] = state
                    self._write(runs)
                    self._seen = None  # the next look reads it back
                    self._state = state
                    return state
            except (OSError, NpuHilError, Timeout) as exc:
                text = exc.message if isinstance(exc, NpuHilError) else str(exc)
                self._give_up(f"{self.path}: cannot write it: {text}")
                return None

    def _stored(self) -> dict[str, BreakerState] | None:
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return {}
        return self._load(info)

    def _load(self, info: os.stat_result) -> dict[str, BreakerState] | None:
        """run id → state, from the file ``info`` describes; None (and a warning) when it is
        not ours to believe. A damaged file of ours holds nothing (a warning says so, once):
        the next failure counted writes it afresh."""
        why = self._distrust(info)
        if why is not None:
            self._give_up(why)
            return None
        try:
            return _runs(read_json(self.path, "a circuit breaker's state file", MAX_BYTES))
        except NpuHilError as exc:
            why = exc.message if str(self.path) in exc.message else f"{self.path}: {exc.message}"
            if why != self._damage:
                self._damage = why
                log.warning(
                    "%s: circuit breaker state unreadable, taken as empty: %s", self.board, why
                )
            return {}

    def _distrust(self, info: os.stat_result) -> str | None:
        """Why the file is not to be believed, or None (:func:`distrust`, and a regular file)."""
        if not stat.S_ISREG(info.st_mode):
            kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a regular file"
            return f"{self.path}: expected a regular file, got {kind}"
        return distrust(self.folder, self.path, info)

    def _write(self, runs: dict[str, BreakerState]) -> None:
        # The runs written last are kept, this one always.
        kept = sorted(runs, key=lambda r: (r == self.run_id, runs[r].time))[-MAX_RUNS:]
        document = {
            "schema": SCHEMA,
            "board": self.board,
            "runs": {
                run_id: {
                    "failures": [f[:MAX_TEXT] for f in runs[run_id].failures[-MAX_FAILURES:]],
                    "opened": (runs[run_id].opened or "")[:MAX_TEXT] or None,
                    "time": runs[run_id].time,
                }
                for run_id in kept
            },
        }
        write_private(self.path, json.dumps(document) + "\n")

    def _give_up(self, why: str) -> None:
        """Stop sharing (``problem`` says why), with a warning."""
        self.problem = why
        log.warning(
            "%s: the circuit breaker counts in this process only (not shared with the run's "
            "other processes): %s",
            self.board,
            why,
        )


INFRA_FAILURES: tuple[type[BaseException], ...] = (TransportError, TimeoutError)
"""What counts as the board's infrastructure failing (the plugin's retryable errors)."""


def describe(exc: BaseException) -> str:
    """``TransportError: connection lost``: an error as a board event, a retry or a breaker's
    failure names it."""
    message = exc.message if isinstance(exc, NpuHilError) else str(exc)
    return f"{type(exc).__name__}: {message}"


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
        failure = describe(exc)
        with self._lock:
            self.infra_errors += 1
        opened_now = False

        def count(state: BreakerState) -> BreakerState:
            nonlocal opened_now  # as the last count says (a shared one may fail, then a local one)
            failures = (*state.failures, failure)[-MAX_FAILURES:]
            opened_now = bool(
                state.opened is None and self.threshold and len(failures) >= self.threshold
            )
            return BreakerState(failures, self._message(failures) if opened_now else state.opened)

        state = self._change(count)
        if opened_now and self.on_open is not None:
            self.on_open(state.opened or "")
        return opened_now

    def succeeded(self) -> None:
        """The board answered: the run of failures is over."""
        state = self._shared_look()
        if state is None or (state.failures and state.opened is None):
            # Written only when there is a run of failures to end: a passing job costs a stat.
            self._change(lambda now: now if now.opened else BreakerState())
        else:
            self._take(state)

    def reset(self) -> None:
        """Close the breaker (after a power cycle, the board starts afresh), for the whole run."""
        self._change(lambda _: BreakerState())

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

    def _change(self, change: Callable[[BreakerState], BreakerState]) -> BreakerState:
        """The state after ``change``: the run's (under its file lock) when there is one, else
        this process's."""
        if self.shared is not None and self.threshold:
            state = self.shared.update(change)
            if state is not None:
                self._take(state)
                return state
        with self._lock:
            state = change(BreakerState(tuple(self.failures), self.opened))
            self.failures[:], self.opened = state.failures, state.opened
        return state


def _runs(data: Any) -> dict[str, BreakerState]:
    """run id → state, from the file's document; NpuHilError when it is not one."""
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(runs, dict):
        raise NpuHilError(f"not a schema-{SCHEMA} circuit breaker file")
    found = {}
    for run_id, entry in runs.items():
        state = _state(entry)
        if state is None:
            raise NpuHilError(f"run {str(run_id)[:80]!r} holds no breaker state")
        found[run_id] = state
    return found


def _state(entry: Any) -> BreakerState | None:
    if not isinstance(entry, dict):
        return None
    failures, opened = entry.get("failures"), entry.get("opened")
    if not isinstance(failures, list) or not all(isinstance(f, str) for f in failures):
        return None
    if opened is not None and (not isinstance(opened, str) or not failures):
        return None  # an open breaker names the failure behind it
    stamp = entry.get("time")
    return BreakerState(
        tuple(failures[-MAX_FAILURES:]), opened, stamp if isinstance(stamp, str) else ""
    )
