"""Each board's health across runs: ``good``, ``bad`` or ``unknown``, with a bounded history,
one JSON file per board (docs/farm/health.md, "Kept across runs"). A file that cannot be read,
or that another local user owns or may write (OpenSSH's StrictModes), reads ``unknown`` with why.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from filelock import FileLock
from typing_extensions import NotRequired, TypedDict

from npu_hil.harness.errors import NpuHilError, UnsafeFolderError
from npu_hil.harness.files import InputFileError, read_json
from npu_hil.harness.folders import check_private_dir, file_problem, private_dir

GOOD, BAD, UNKNOWN = "good", "bad", "unknown"
STATES = (GOOD, BAD, UNKNOWN)
SCHEMA = 1
MAX_HISTORY = 32
"""Events kept per board: enough for a month of nightlies' transitions, a few KiB at most."""
MAX_CAUSE_CHARS = 2000
LOCK_TIMEOUT_S = 30.0

# What happened, as the history names it.
CHECK_PASSED = "health check passed"
CHECK_FAILED = "health check failed"
BREAKER_OPENED = "circuit breaker opened"
POWER_CYCLED = "power cycled"
CLEARED = "power cycled and passed a health check"
RECOVERY_FAILED = "power cycled, still failing"
CLEARED_BY_HAND = "cleared by hand"


HEALTH_DIR_ENV = "NPU_HIL_HEALTH_DIR"
"""Where the boards' health is kept instead of beside the locks (a folder of this user's own):
a test suite's own folder, so a test that marks a board bad leaves the user's boards alone."""


MAX_HEALTH_BYTES = 1 << 20
"""A health file: MAX_HISTORY events and a cause of MAX_CAUSE_CHARS come to a few KiB."""


def state_key(source: str, project: str | os.PathLike[str] | None = None) -> str:
    """The key of the state an inventory describes: ``<folder name>-<digest>`` of the
    inventory file's absolute path, or, for the built-in simulated farm (a ``<...>`` source,
    the same board names in every project), of the project folder it runs for (``project``,
    else the current folder)."""
    if source.startswith("<"):
        where = os.path.abspath(project if project is not None else os.getcwd())
        basis, label = f"builtin:{where}", "builtin-" + os.path.basename(where)
    else:
        where = os.path.abspath(os.path.join(project or os.getcwd(), source))
        basis, label = f"inventory:{where}", os.path.basename(os.path.dirname(where))
    label = re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("._")[:40] or "inventory"
    return f"{label}-{hashlib.sha256(basis.encode('utf-8', 'replace')).hexdigest()[:12]}"


def health_folder(workdir: str | os.PathLike[str], key: str) -> Path:
    """The folder of the boards' kept health: ``$NPU_HIL_HEALTH_DIR`` when set (a folder
    chosen for one suite, taken as it is), else ``<workdir>/health/<key>`` (:func:`state_key`)."""
    given = os.environ.get(HEALTH_DIR_ENV)
    return Path(given) if given else Path(workdir) / "health" / key


def board_file(folder: Path, board: str, suffix: str, what: str) -> Path:
    """``<folder>/<board><suffix>``; NpuHilError when ``board`` cannot name a file there."""
    if not board or "/" in board or board.startswith("."):
        raise NpuHilError(f"board name {board!r} cannot name {what}")
    return folder / f"{board}{suffix}"


def distrust(folder: Path, path: Path, info: os.stat_result) -> str | None:
    """Why a state file (``info`` its lstat) is not to be believed, or None: its folder or itself
    is another user's or writable by others (whoever can write it decides which boards are good)."""
    try:
        check_private_dir(folder)
    except UnsafeFolderError as exc:
        return f"not trusted: {exc.message}"
    except OSError as exc:
        return f"{folder}: {exc.strerror or exc}"
    return file_problem(path, info)


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _short(stamp: str) -> str:
    """``2026-12-01T03:12:44Z`` → ``2026-12-01 03:12Z``: what a refusal says."""
    return f"{stamp[:10]} {stamp[11:16]}Z" if len(stamp) >= 16 else stamp


class HealthEventDocument(TypedDict):
    """One event of a health file's ``history`` (:meth:`HealthEvent.to_dict`)."""

    time: str
    state: str
    what: str
    cause: str
    run_id: str


class HealthDocument(TypedDict):
    """A board's health file, ``<board>.health.json`` (:meth:`BoardHealth.to_dict`), also
    summary.json's ``health_history`` per board; ``problem``: why the file could not be read."""

    schema: int
    board: str
    state: str
    since: str
    cause: str
    history: list[HealthEventDocument]
    problem: NotRequired[str]


@dataclass(frozen=True)
class HealthEvent:
    time: str
    state: str
    what: str
    cause: str = ""
    run_id: str = ""

    def to_dict(self) -> HealthEventDocument:
        return cast(HealthEventDocument, asdict(self))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HealthEvent:
        state = str(data.get("state", UNKNOWN))
        return cls(
            time=str(data.get("time", "")),
            state=state if state in STATES else UNKNOWN,
            what=str(data.get("what", "")),
            cause=str(data.get("cause", "")),
            run_id=str(data.get("run_id", "")),
        )


@dataclass(frozen=True)
class BoardHealth:
    """One board's stored state: ``since`` when it has been in it, the ``cause`` that put it
    there, the events in order (oldest first), and ``problem``: why the file could not be read,
    if it could not."""

    board: str
    state: str = UNKNOWN
    since: str = ""
    cause: str = ""
    history: tuple[HealthEvent, ...] = ()
    problem: str | None = None

    @property
    def last(self) -> HealthEvent | None:
        return self.history[-1] if self.history else None

    def refusal(self) -> str:
        """What a run that meets this bad board says."""
        return (
            f"{self.board} is marked bad since {_short(self.since)}: {self.cause}; power-cycle "
            f"it and pass a health check to clear, or --clear-health {self.board}"
        )

    def to_dict(self) -> HealthDocument:
        document: HealthDocument = {
            "schema": SCHEMA,
            "board": self.board,
            "state": self.state,
            "since": self.since,
            "cause": self.cause,
            "history": [e.to_dict() for e in self.history],
        }
        if self.problem:
            document["problem"] = self.problem
        return document


@dataclass
class HealthStore:
    """The boards' stored health in ``folder`` (a folder of this user's own)."""

    folder: Path
    _made: bool = field(default=False, repr=False)

    def path(self, board: str) -> Path:
        return board_file(self.folder, board, ".health.json", "a health file")

    def _lock(self, board: str) -> FileLock:
        if not self._made:
            self.folder = private_dir(self.folder)
            self._made = True
        return FileLock(str(self.path(board)) + ".lock", timeout=LOCK_TIMEOUT_S)

    def read(self, board: str) -> BoardHealth:
        """The board's stored health (``unknown`` when nothing is stored). No lock: the file is
        only ever replaced whole."""
        path = self.path(board)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return BoardHealth(board)
        except OSError as exc:
            return BoardHealth(board, problem=f"{path}: {exc.strerror or exc}")
        why = distrust(self.folder, path, info)
        if why is not None:
            return BoardHealth(board, problem=why)
        try:
            data = read_json(path, "a board's health file", MAX_HEALTH_BYTES, follow=False)
        except InputFileError as exc:
            return BoardHealth(board, problem=exc.message)
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            return BoardHealth(board, problem=f"{path}: not a schema-{SCHEMA} health file")
        state = str(data.get("state", UNKNOWN))
        found = data.get("history")
        history: list[Any] = found if isinstance(found, list) else []
        return BoardHealth(
            board=board,
            state=state if state in STATES else UNKNOWN,
            since=str(data.get("since", "")),
            cause=str(data.get("cause", "")),
            history=tuple(HealthEvent.from_dict(e) for e in history if isinstance(e, dict)),
        )

    def record(
        self, board: str, state: str, what: str, *, cause: str = "", run_id: str = ""
    ) -> BoardHealth:
        """Add an event and move the board to ``state``; the stored result. The same event
        twice in a row from one run (two pytest-xdist workers checking one board) is kept
        once."""
        if state not in STATES:
            raise NpuHilError(f"health state must be one of {', '.join(STATES)}, got {state!r}")
        event = HealthEvent(utc_now(), state, what, cause[:MAX_CAUSE_CHARS], run_id)
        with self._lock(board):
            now = self.read(board)
            last = now.last
            history = list(now.history)
            if last is None or replace(last, time=event.time) != event:
                history.append(event)
            changed = state != now.state or now.problem is not None
            updated = BoardHealth(
                board=board,
                state=state,
                since=event.time if changed or not now.since else now.since,
                cause=event.cause if changed or state == BAD else now.cause,
                history=tuple(history[-MAX_HISTORY:]),
            )
            self._write(board, updated)
        return updated

    def clear(self, board: str, *, run_id: str = "", by: str = "--clear-health") -> BoardHealth:
        """Forget that the board is bad (``unknown``: its next health check decides)."""
        return self.record(board, UNKNOWN, CLEARED_BY_HAND, cause=by, run_id=run_id)

    def _write(self, board: str, health: BoardHealth) -> None:
        write_private(self.path(board), json.dumps(health.to_dict(), indent=1) + "\n")


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` at once (a temporary file of this user's alone, renamed
    over it): a reader sees the old file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def stored_health(folder: str | os.PathLike[str], boards: list[str]) -> dict[str, HealthDocument]:
    """board → its stored health (``to_dict``) for the boards with a health file in
    ``folder``; nothing is created (a report reads it). A FIFO, a symlink or a folder in a
    health file's place is there too, read as ``unknown`` with why (``problem``): damage the
    report names, never one it skips."""
    store = HealthStore(Path(folder))
    found = {}
    for board in boards:
        with contextlib.suppress(NpuHilError):  # a name that cannot name a health file has none
            if os.path.lexists(store.path(board)):
                found[board] = store.read(board).to_dict()
    return found
