"""The farm: the inventory's boards, one session per board, health, power and cross-process locks.

A simulated board runs the real agent in a per-board folder here; a real one is reached through
its inventory transport, or runs simulated under ``backend="auto"`` with ``fallback: sim`` when
it cannot be; a board whose ``adapter`` is ``sim`` is the simulated runtime behind a real link.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from operator import attrgetter
from pathlib import Path
from typing import Any

from filelock import FileLock

import npu_hil
from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.board.kernlog import KMSG_ENV
from npu_hil.harness.errors import NpuHilError, TransportError
from npu_hil.harness.farm.breaker import BreakerFile, CircuitBreaker
from npu_hil.harness.farm.defaults import BACKENDS, DEFAULT_THRESHOLD
from npu_hil.harness.farm.health_store import (
    BAD,
    GOOD,
    HealthStore,
    health_folder,
    state_key,
)
from npu_hil.harness.farm.health_store import BREAKER_OPENED as _BREAKER_OPENED
from npu_hil.harness.farm.health_store import CHECK_FAILED as _CHECK_FAILED
from npu_hil.harness.farm.health_store import CHECK_PASSED as _CHECK_PASSED
from npu_hil.harness.farm.health_store import CLEARED as _CLEARED
from npu_hil.harness.farm.health_store import POWER_CYCLED as _POWER_CYCLED
from npu_hil.harness.farm.health_store import RECOVERY_FAILED as _RECOVERY_FAILED
from npu_hil.harness.farm.inventory import SIM_ADAPTER, Board, Inventory, load_inventory
from npu_hil.harness.farm.labgrid_boards import FarmPlaces, resolve_labgrid_boards
from npu_hil.harness.farm.recovery import (
    BoardCondition,
    BoardIdentityError,
    BoardUnhealthyError,
    Health,
    RetryPolicy,
    board_identity,
    health_problem,
)
from npu_hil.harness.farm.recovery import power_cycle as _power_cycle
from npu_hil.harness.farm.session import BoardSession, connect
from npu_hil.harness.folders import default_workdir, private_dir
from npu_hil.harness.transport.base import Transport
from npu_hil.harness.transport.local import LocalTransport

log = logging.getLogger(__name__)

HARNESS_ROOT = Path(npu_hil.__file__).resolve().parent.parent
"""The folder holding ``harness`` and ``targets``: what a simulated board needs on its path."""
LOCK_TIMEOUT_S = 3600.0


CLOSE_THREADS = 32
"""Sessions closed at once when a farm closes (each mostly waits on its agent's exit)."""


class Farm:
    """The boards of ``inventory`` (an :class:`Inventory` or a path to one).

    ``backend``: ``auto`` (each board as the inventory says, falling back to sim where allowed),
    ``sim`` (every board simulated) or ``hw`` (real boards only, no fallback). ``workdir`` holds
    the simulated boards' folders and the lock files; share it between processes that must not
    use a board at once. It defaults to ``npu-hil`` in this user's runtime or cache folder
    (:func:`npu_hil.harness.folders.default_workdir`) and must be a folder of this user's own
    (UnsafeFolderError otherwise). ``keep_remote``: the agent writes each job's files on the board
    for inspection. ``breaker_threshold``: after that many infrastructure failures in a row a
    board is marked unhealthy and every later run on it raises BoardBrokenError at once
    (:mod:`npu_hil.harness.farm.breaker`); None or 0 never marks one. ``retry``: how often and after
    what backoff a model run on a session of this farm is retried after an infrastructure
    failure (:class:`~npu_hil.harness.farm.recovery.RetryPolicy`; default: once, after 1 s, as in
    pytest).
    ``sim_faults``: board name → faults every job of that board carries while it runs simulated
    (``--sim-fault``, :mod:`npu_hil.harness.plugin.sim_faults`); a board the inventory does not have
    is an error. ``health_job``: the golden job of every health check (called with the board's
    session; raises an NpuHilError when the board fails it, returns a note), e.g.
    :func:`npu_hil.harness.pipeline.golden.golden_job`; None checks reachability, versions and
    identity only. ``run_id`` names this run in the boards' health history
    (:mod:`npu_hil.harness.farm.health_store`), kept under ``health_key`` (default: the key of
    this inventory, :func:`~npu_hil.harness.farm.health_store.state_key`, for the built-in farm
    of the current folder). ``runtime``: the name of a runtime version
    installed on the boards (the inventory's ``runtimes``); every job then carries the options
    that pick it, and :meth:`boards` leaves out the boards that do not have it. None: each
    board's default runtime.
    """

    def __init__(
        self,
        inventory: Inventory | str | os.PathLike[str],
        *,
        backend: str = "auto",
        workdir: str | os.PathLike[str] | None = None,
        keep_remote: bool = False,
        breaker_threshold: int | None = DEFAULT_THRESHOLD,
        retry: RetryPolicy | None = None,
        sim_faults: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
        health_job: Callable[[BoardSession], str] | None = None,
        run_id: str | None = None,
        runtime: str | None = None,
        max_agents: int | None = None,
        health_key: str | None = None,
    ) -> None:
        if backend not in BACKENDS:
            raise NpuHilError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        # The farm, not the inventory file, asks a labgrid coordinator which places are boards.
        self.inventory = resolve_labgrid_boards(
            inventory if isinstance(inventory, Inventory) else load_inventory(inventory)
        )
        self.backend = backend
        # Agents are deployed and run from here: a folder of ours alone (UnsafeFolderError).
        self.workdir = private_dir(workdir if workdir is not None else default_workdir())
        self.keep_remote = keep_remote
        if breaker_threshold is not None and breaker_threshold < 0:
            raise NpuHilError(f"breaker_threshold must be 0 or more, got {breaker_threshold}")
        self.breaker_threshold = breaker_threshold
        self.retry = retry if retry is not None else RetryPolicy()
        names = {b.name for b in self.inventory.boards}
        unknown = sorted(set(sim_faults or {}) - names)
        if unknown:
            raise NpuHilError(
                f"sim_faults: no board {', '.join(unknown)} in {self.inventory.source}"
            )
        self.sim_faults = {k: [dict(f) for f in v] for k, v in (sim_faults or {}).items()}
        if runtime is not None and not any(runtime in b.runtimes for b in self.inventory.boards):
            known = sorted({name for b in self.inventory.boards for name in b.runtimes})
            raise NpuHilError(
                f"runtime {runtime!r}: no board of {self.inventory.source} has it "
                f"(runtimes there: {', '.join(known) or 'none'})"
            )
        self.runtime = runtime
        if max_agents is not None and max_agents < 1:
            raise NpuHilError(f"max_agents must be 1 or more, got {max_agents}")
        self.max_agents = max_agents
        self._conditions: dict[str, BoardCondition] = {}
        self.health_job = health_job
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        self.run_id = run_id or f"{stamp}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        # Every run of this user on this host with this inventory shares it; other inventories
        # (another project on the built-in farm) keep their own.
        key = health_key or state_key(self.inventory.source)
        self.health_store = HealthStore(health_folder(self.workdir, key))
        self._breakers: dict[str, CircuitBreaker] = {}
        self._sessions: dict[str, BoardSession] = {}
        self._health: dict[str, Health] = {}
        self._places = FarmPlaces(
            self.inventory.labgrid,
            self.workdir,
            board_places=(b.place for b in self.inventory.boards if b.place is not None),
        )

    # --- selection -------------------------------------------------------------------------------

    def boards(
        self,
        *,
        socs: Iterable[str] | None = None,
        vendors: Iterable[str] | None = None,
        targets: Iterable[str] | None = None,
        names: Iterable[str] | None = None,
    ) -> list[Board]:
        """The boards matching every filter given, in inventory order. ``socs`` and ``targets``
        both name targets and are separate filters (a test's ``soc`` marker and the command line's
        ``--target`` narrow each other). Under ``backend="hw"`` simulated boards are left out."""
        filters: list[tuple[set[str] | None, Callable[[Board], str]]] = [
            (_set(socs), attrgetter("target")),
            (_set(targets), attrgetter("target")),
            (_set(vendors), attrgetter("vendor")),
            (_set(names), attrgetter("name")),
        ]
        return [
            board
            for board in self.inventory.boards
            if all(wanted is None or key(board) in wanted for wanted, key in filters)
            and not (self.backend == "hw" and board.simulated)
            and (self.runtime is None or self.runtime in board.runtimes)
        ]

    # --- sessions --------------------------------------------------------------------------------

    def session(self, board: Board | str) -> BoardSession:
        """The board's session (one per board and farm). With ``max_agents``, the agents of
        the sessions used least recently are ended beyond that many (each starts again with
        its board's next job), so a farm's memory does not grow with its boards."""
        board = self._board(board)
        cached = self._sessions.pop(board.name, None)
        if cached is None:
            cached = self._open(board)
        elif cached.fallback_reason is None:
            self._places.check(cached.board)  # a place someone took away is not used on
        self._sessions[board.name] = cached  # the most recently used last
        self._end_idle_agents(cached)
        return cached

    def _end_idle_agents(self, current: BoardSession) -> None:
        """Room for ``current``'s agent: the others' beyond ``max_agents - 1`` end, least
        recently used first."""
        if self.max_agents is None:
            return
        others = [s for s in self._sessions.values() if s is not current and s.client.running]
        for idle in others[: max(0, len(others) - (self.max_agents - 1))]:
            try:
                idle.client.close(timeout=5.0)
            except NpuHilError as exc:  # its next job starts a fresh agent anyway
                log.warning("%s: ending its idle agent: %s", idle.name, exc)

    def _open(self, board: Board) -> BoardSession:
        if self.backend == "sim" and not board.simulated:
            return self._sim_session(board, "--backend sim runs every board simulated")
        if board.simulated:
            if self.backend == "hw":
                raise TransportError(f"{board.name}: a simulated board, but the backend is hw")
            return self._sim_session(board, None)
        try:
            # A labgrid board's place is acquired here, and its transport found there.
            board = self._places.reach(board)
            transport = connect(board, self._board_dir(board))
        except TransportError as exc:
            if self.backend == "auto" and board.fallback == "sim":
                self._places.release(board)  # a labgrid place it will not use goes back
                log.warning("%s; running it simulated", exc.message)
                return self._sim_session(board, exc.message)
            raise
        return self._new_session(board, transport, board.python, board.adapter)

    def _sim_session(self, board: Board, reason: str | None) -> BoardSession:
        path = os.pathsep.join(p for p in (str(HARNESS_ROOT), os.environ.get("PYTHONPATH")) if p)
        # The simulated board's own kernel log (its simulated runtime writes it, its agent
        # reads it), never this machine's.
        kmsg = self._board_dir(board) / "sim" / "root" / "dev" / "kmsg"
        transport = LocalTransport(
            self._board_dir(board) / "sim",
            python=sys.executable,
            env={"PYTHONPATH": path, KMSG_ENV: str(kmsg)},
        )
        return self._new_session(board, transport, sys.executable, SIM_ADAPTER, reason)

    def _new_session(
        self,
        board: Board,
        transport: Transport,
        python: str | None,
        adapter: str,
        fallback_reason: str | None = None,
    ) -> BoardSession:
        """A session running ``adapter`` on the board; the ``sim`` adapter's results are
        simulated ones whatever the link (a real one: ``npu-hil simfarm``)."""
        simulated = adapter == SIM_ADAPTER
        runtime = self.runtime if self.runtime in board.runtimes else None
        return BoardSession(
            board=board,
            transport=transport,
            client=AgentClient(transport, python=python, keep_jobs=self.keep_remote),
            simulated=simulated,
            adapter=adapter,
            adapter_options=self._sim_options(board) if simulated else board.options_for(runtime),
            workdir=self._board_dir(board),
            fallback_reason=fallback_reason,
            manifest_path=self.inventory.manifest,
            breaker=self.breaker(board),
            retry=self.retry,
        )

    def _sim_options(self, board: Board) -> dict[str, Any]:
        """The simulated runtime's options for the board: its target, the inventory's options
        and runtime when the board is declared simulated (a real board's are for its own
        adapter, not the stand-in), and its faults if any."""
        own: dict[str, Any] = {}
        if board.simulated or board.adapter == SIM_ADAPTER:
            own = board.options_for(self.runtime if self.runtime in board.runtimes else None)
        faults = self.sim_faults.get(board.name)
        return {**own, "target": board.target, **({"faults": list(faults)} if faults else {})}

    def _board_dir(self, board: Board) -> Path:
        return private_dir(self.workdir / "boards" / board.name)

    def _board(self, board: Board | str) -> Board:
        return self.inventory.board(board) if isinstance(board, str) else board

    def breaker(self, board: Board | str) -> CircuitBreaker:
        """The board's circuit breaker (one per board and farm, shared by its sessions)."""
        name = self._board(board).name
        found = self._breakers.get(name)
        if found is None:
            # Kept with the run's other processes (pytest-xdist workers share the run id and
            # this inventory's health folder): a board one of them found dead is dead to all.
            shared = BreakerFile(self.health_store.folder, name, self.run_id)
            found = self._breakers[name] = CircuitBreaker(
                name, self.breaker_threshold, shared=shared
            )
            # An open breaker outlives the run: the next one refuses the board at once.
            found.on_open = lambda message: self._mark(name, BAD, _BREAKER_OPENED, message)
        return found

    # --- health, recovery, power, locks --------------------------------------------------------

    def health(self, board: Board | str) -> Health:
        """Reachable (ping) and the runtime's versions, checked once per board and farm. Never
        raises for an unhealthy board: the cause is in ``error``."""
        board = self._board(board)
        cached = self._health.get(board.name)
        if cached is not None:
            return cached
        simulated, reason = board.simulated, None
        identity: dict[str, Any] = {}
        try:
            self.breaker(board).check()
            session = self.session(board)
            simulated, reason = session.simulated, session.fallback_reason
            ping = session.client.ping(timeout=board.timeouts.health)
            versions = session.client.versions(
                session.adapter, session.adapter_options, timeout=board.timeouts.health
            )
            verdict = board_identity(
                board.target, simulated=simulated, ping=ping, versions=versions
            )
            identity = dict(verdict.to_dict())
            if verdict.state == "mismatch":
                raise BoardIdentityError(
                    f"board {board.name} is not the SoC its inventory says: {verdict.detail}"
                )
            if verdict.state == "unknown":
                log.warning("%s: SoC identity unknown: %s", board.name, verdict.detail)
            golden = self.health_job(session) if self.health_job is not None else ""
            health = Health(True, versions, None, simulated, reason, identity, golden)
        except NpuHilError as exc:
            health = Health(
                False,
                {},
                f"{type(exc).__name__}: {exc.message}",
                simulated,
                reason,
                identity=identity,
                recoverable=not isinstance(exc, BoardIdentityError),
            )
        self._health[board.name] = health
        return health

    def check_health(self, board: Board | str) -> None:
        """Once per board and farm: healthy, or power-cycled and checked again when the board has
        power control (:func:`~npu_hil.harness.farm.recovery.health_problem`). BoardUnhealthyError
        with the cause when it is not, now and at every later call."""
        board = self._board(board)
        condition = self._conditions.get(board.name)
        breaker = self.breaker(board)
        errors = breaker.infra_errors
        if (
            condition is not None
            and condition.problem is None
            and errors > condition.errors_seen
            and not breaker.is_open  # an open breaker speaks for itself (BoardBrokenError)
        ):
            # Infrastructure errors since the last check: check again before the next use.
            self._health.pop(board.name, None)
            condition = None
        if condition is None:
            condition = self._conditions[board.name] = BoardCondition(errors_seen=errors)
            condition.problem = self._examine(board, condition)
            # What the health job found damaged and mended (its model copied again).
            session = self._sessions.get(board.name)
            if session is not None:
                condition.events.extend(session.take_events())
                if condition.problem is not None and not condition.boot_log:
                    # Why it is unhealthy is often in what its console printed while it rebooted.
                    condition.boot_log = session.take_boot_log()
        if condition.problem is not None:
            raise BoardUnhealthyError(condition.problem)

    def _examine(self, board: Board, condition: BoardCondition) -> str | None:
        """The health check with the board's stored state: a board stored bad is refused at
        once, unless a power cycle can be tried (it has power control, or one was recorded
        since) and the check passes after it; the outcome is stored for the next run."""
        if not self._kept(board):
            return health_problem(self, board, condition.events)
        stored = self.health_store.read(board.name)
        if stored.problem is not None:
            log.warning("%s: health state unreadable: %s", board.name, stored.problem)
        if stored.state == BAD:
            last = stored.last
            cycled = last is not None and last.what == _POWER_CYCLED
            tried = last is not None and last.run_id == self.run_id and last.state == BAD
            if not cycled and (board.power is None or tried):
                return stored.refusal()  # nothing touched: refused at once
            if not cycled:
                try:
                    self.power_cycle(board)
                except NpuHilError as exc:
                    self._mark(board.name, BAD, _RECOVERY_FAILED, stored.cause)
                    return f"{stored.refusal()} (power cycle failed: {exc.message})"
            self._health.pop(board.name, None)
            health = self.health(board)
            if health.ok:
                self._mark(board.name, GOOD, _CLEARED, _passed(health))
                condition.events.append(
                    f"marked bad since {stored.since}: {stored.cause}; power cycled and passed "
                    "a health check: cleared"
                )
                return None
            self._mark(board.name, BAD, _RECOVERY_FAILED, health.error or "unhealthy")
            return f"{stored.refusal()} (after a power cycle: {health.error or 'unhealthy'})"
        problem = health_problem(self, board, condition.events)
        if problem is None:
            self._mark(board.name, GOOD, _CHECK_PASSED, _passed(self.health(board)))
        else:
            self._mark(board.name, BAD, _CHECK_FAILED, problem)
        return problem

    def _kept(self, board: Board) -> bool:
        """Whether the board's health is kept across runs: not for a board the farm simulates
        itself (``backend: sim``, ``--backend sim``, a fallback), which has no hardware to go
        bad; a board reached through its transport (hardware, or a simulated runtime behind a
        real link) is kept."""
        session = self._sessions.get(board.name)
        fallback = session is not None and session.fallback_reason is not None
        return not (board.simulated or self.backend == "sim" or fallback)

    def _mark(self, board: str, state: str, what: str, cause: str) -> None:
        if not self._kept(self._board(board)):
            return
        try:
            self.health_store.record(board, state, what, cause=cause, run_id=self.run_id)
        except (OSError, NpuHilError) as exc:  # a health file is evidence, not a precondition
            log.warning("%s: cannot store its health (%s): %s", board, state, exc)

    def clear_health(self, board: Board | str, *, by: str = "--clear-health") -> None:
        """Forget that the board is bad: its next health check decides."""
        name = self._board(board).name
        self.health_store.clear(name, run_id=self.run_id, by=by)
        self._conditions.pop(name, None)
        self._health.pop(name, None)

    def condition(self, board: Board | str) -> BoardCondition:
        """What :meth:`check_health` found and did for the board (empty before it ran)."""
        return self._conditions.get(self._board(board).name) or BoardCondition()

    def ready(self, board: Board | str) -> BoardSession:
        """The board's session, checked as a test gets it: healthy (:meth:`check_health`: power
        cycled once if it has to be) and its circuit breaker closed; BoardUnhealthyError or
        BoardBrokenError otherwise."""
        self.check_health(board)
        self.breaker(board).check()
        return self.session(board)

    def power_cycle(self, board: Board | str) -> None:
        """Power-cycle a real board with its inventory command and stop its resident agent, so the
        next job starts fresh. TransportError when there is no power control or it fails."""
        board = self._board(board)
        session = self._sessions.get(board.name)
        # A simulated board has no power to cut: restarting its agent is the equivalent.
        if session is None or not session.simulated:
            _power_cycle(board, labgrid=self._places)
        self._health.pop(board.name, None)  # the next health() looks again
        self.breaker(board).reset()  # a fresh start: its failures were before the cycle
        if self.health_store.read(board.name).state == BAD:
            # The next health check decides whether it is cleared.
            self._mark(board.name, BAD, _POWER_CYCLED, self.health_store.read(board.name).cause)
        if session is not None:
            session.restart()

    def lock(self, board: Board | str, *, timeout: float = LOCK_TIMEOUT_S) -> FileLock:
        """A cross-process lock for the board (``with farm.lock(board): ...``): pytest-xdist
        workers sharing this farm's workdir never use one board at the same time."""
        board = self._board(board)
        folder = private_dir(self.workdir / "locks")
        return FileLock(str(folder / f"{board.name}.lock"), timeout=timeout)

    def close(self) -> None:
        """Shut every resident agent down, all at once (each may wait for its agent to exit:
        one after another, a hundred boards outlast pytest-xdist's exit timeout), then release
        the labgrid places the farm holds."""
        sessions, self._sessions = self._sessions, {}

        def end(session: BoardSession) -> None:
            try:
                session.close()
            except NpuHilError as exc:  # one board's trouble must not keep the others open
                log.warning("%s: %s", session.name, exc)

        if sessions:
            workers = min(CLOSE_THREADS, len(sessions))
            with ThreadPoolExecutor(workers, thread_name_prefix="npu-hil-close") as pool:
                list(pool.map(end, sessions.values()))
        self._places.close()

    def __enter__(self) -> Farm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _set(values: Iterable[str] | None) -> set[str] | None:
    """None (no filter) for None; a lone string is one name, not its characters."""
    return None if values is None else {values} if isinstance(values, str) else set(values)


def _passed(health: Health) -> str:
    """The cause text of a passing check: what the identity and the golden job said."""
    parts = [str(health.identity.get("detail", ""))] if health.identity else []
    parts += [health.golden] if health.golden else []
    return "; ".join(p for p in parts if p)
