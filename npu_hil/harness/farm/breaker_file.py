"""What a board's circuit breaker has learned, shared by every process of a run.

pytest-xdist runs a session in several worker processes, each with a farm of its own: a breaker
kept in memory would let each worker rediscover a dead board (three failures each, and each
paid with its retries). So a breaker given a :class:`BreakerFile` keeps its failures in a row
and, once open, its message in one small JSON file per board in the farm's health folder (a
private folder, keyed by the inventory: another project's board of the same name is another
file), ``<board>.breaker.json``, with an entry per run (the run id the workers share), the
last :data:`MAX_RUNS` runs kept.

The file is rewritten whole (a temporary file renamed over it) under a file lock, so a failure
counted in one worker and a success seen in another never lose each other. It is read without
the lock, and only when it changed (inode, size, times): checking the breaker before each job
costs one ``stat``. A file that cannot be trusted or read (another user's or writable by
others, a symlink, a FIFO, damaged) or a folder that cannot be written is never an error: the
breaker counts in its own process, as it did before, and a warning says why once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import stat
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.files import read_json
from npu_hil.harness.folders import check_private_dir, file_problem, private_dir

__all__ = ["MAX_FAILURES", "MAX_RUNS", "BreakerFile", "BreakerState"]

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
    """The shared breaker state of ``board`` for the run ``run_id``, in ``folder``."""

    def __init__(self, folder: str | os.PathLike[str], board: str, run_id: str) -> None:
        if not board or "/" in board or board.startswith("."):
            raise NpuHilError(f"board name {board!r} cannot name a circuit breaker file")
        self.folder = Path(folder)
        self.board = board
        self.run_id = run_id
        self.problem: str | None = None  # why it is not used (then the breaker is per process)
        self._seen: tuple[int, ...] | None = None
        self._state = _EMPTY
        self._folder_checked = False
        self._damage: str | None = None  # the damage last warned of
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self.folder / f"{self.board}.breaker.json"

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
                self._folder_checked = True
                with FileLock(f"{self.path}.lock", timeout=LOCK_TIMEOUT_S):
                    runs = self._stored()
                    if runs is None:
                        return None
                    state = dataclasses.replace(
                        change(runs.get(self.run_id, _EMPTY)),
                        time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
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
        """Why the file is not to be believed, or None: its folder or itself another user's
        or writable by others (whoever can write it decides which boards are refused)."""
        if not self._folder_checked:
            try:
                check_private_dir(self.folder)
            except (OSError, NpuHilError) as exc:
                return f"not trusted: {exc.message if isinstance(exc, NpuHilError) else exc}"
            self._folder_checked = True
        if not stat.S_ISREG(info.st_mode):
            kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a regular file"
            return f"{self.path}: expected a regular file, got {kind}"
        return file_problem(self.path, info)

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
        path = self.path
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(document) + "\n")
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def _give_up(self, why: str) -> None:
        """Stop sharing (``problem`` says why), with a warning."""
        self.problem = why
        log.warning(
            "%s: the circuit breaker counts in this process only (not shared with the run's "
            "other processes): %s",
            self.board,
            why,
        )


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
