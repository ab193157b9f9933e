"""The soak loop (docs/farm/health.md, "Soak"): each board's contexts (an agent each:
:class:`~npu_hil.harness.agent.client.AgentClient` is not thread-safe) are primed in turn (one job
per model, so the bundle and models are copied once, not raced), then run in threads until the
deadline or their count of jobs. A job is :func:`npu_hil.harness.pipeline.run_model` with the
farm's retries and breaker; a board that breaks or fails its health check stops, the cause kept."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from typing_extensions import TypedDict

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.farm import Farm
from npu_hil.harness.farm.breaker import BoardBrokenError
from npu_hil.harness.farm.inventory import Board
from npu_hil.harness.farm.session import BoardSession, close_transport, connect
from npu_hil.harness.models import build
from npu_hil.harness.pipeline import run_model
from npu_hil.harness.soak.samples import (
    ContextCounts,
    ContextDocument,
    Failure,
    FailureDocument,
    MemorySample,
    SampleDocument,
    SoakPlan,
    sample_from,
)
from npu_hil.harness.transport.local import LocalTransport

log = logging.getLogger(__name__)

MAX_FAILURES_KEPT = 2000
"""Failures listed one by one in the run (the counts are always whole)."""


class SoakError(NpuHilError):
    """A soak that cannot start: no board, no model, a plan that does not hold together."""


class BoardDocument(TypedDict):
    """A board's part in soak.json's ``boards`` (``BoardSoak.to_dict``)."""

    board: str
    target: str
    simulated: bool
    jobs: int
    errors: int
    max_concurrent: int
    problem: str | None
    contexts: list[ContextDocument]
    failures: list[FailureDocument]
    samples: list[SampleDocument]


@dataclass
class BoardSoak:
    """One board's part: its contexts' counts, samples and failures; ``simulated`` as its
    session says; ``max_concurrent``: the most jobs that were running on it at one moment;
    ``problem``: why it did not run at all (its health check), if so."""

    board: str
    target: str
    simulated: bool = False
    contexts: list[ContextCounts] = field(default_factory=list)
    samples: list[MemorySample] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    max_concurrent: int = 0
    problem: str | None = None

    @property
    def jobs(self) -> int:
        return sum(c.jobs for c in self.contexts)

    @property
    def errors(self) -> int:
        return sum(c.errors for c in self.contexts)

    def to_dict(self) -> BoardDocument:
        return {
            "board": self.board,
            "target": self.target,
            "simulated": self.simulated,
            "jobs": self.jobs,
            "errors": self.errors,
            "max_concurrent": self.max_concurrent,
            "problem": self.problem,
            "contexts": [c.to_dict() for c in self.contexts],
            "failures": [f.to_dict() for f in self.failures],
            "samples": [s.to_dict() for s in self.samples],
        }


@dataclass
class SoakRun:
    """What a soak did: the plan, each board's part, when it started and how long it ran."""

    plan: SoakPlan
    boards: list[BoardSoak]
    started: float
    elapsed_s: float = 0.0
    interrupted: bool = False


def _inputs(model: str, shape: Sequence[int], seed: int) -> dict[str, np.ndarray]:
    """Inputs for every input of the reference model, different each job (a runtime that hands
    back an earlier job's output fails the diff)."""
    proto = build(model, tuple(shape))
    rng = np.random.default_rng(seed)
    return {
        i.name: rng.uniform(-1.0, 1.0, tuple(shape)).astype(np.float32) for i in proto.graph.input
    }


class _Board:
    """The shared state of one board's contexts: counts under a lock, the concurrency gauge."""

    def __init__(self, part: BoardSoak, plan: SoakPlan, started: float) -> None:
        self.part = part
        self.plan = plan
        self.started = started
        self.lock = threading.Lock()
        self.running = 0

    def now(self) -> float:
        return time.monotonic() - self.started

    def sample(self, session: BoardSession, counts: ContextCounts) -> None:
        try:
            memory = session.client.memory(timeout=session.board.timeouts.health)
        except NpuHilError as exc:
            log.warning("%s context %d: no memory reading: %s", counts.board, counts.context, exc)
            return
        sample = sample_from(
            memory,
            board=counts.board,
            context=counts.context,
            t_s=self.now(),
            jobs=counts.jobs,
            errors=counts.errors,
        )
        with self.lock:
            self.part.samples.append(sample)
            if sample.pid is not None and sample.pid not in counts.pids:
                counts.pids.append(sample.pid)

    def job(self, session: BoardSession, counts: ContextCounts, model: str, seed: int) -> None:
        with self.lock:
            self.running += 1
            self.part.max_concurrent = max(self.part.max_concurrent, self.running)
        kind = message = ""
        try:
            run = run_model(session, model, _inputs(model, self.plan.shape, seed))
            if not run.ok:
                kind, message = "mismatch", run.summary()
        except BoardBrokenError:
            raise
        except NpuHilError as exc:
            kind, message = type(exc).__name__, exc.message
        finally:
            with self.lock:
                self.running -= 1
        with self.lock:
            counts.tally(kind)
            if kind and len(self.part.failures) < MAX_FAILURES_KEPT:
                now = round(self.now(), 3)
                failure = Failure(counts.board, counts.context, now, model, kind, message[:500])
                self.part.failures.append(failure)


def _context_session(base: BoardSession, index: int) -> tuple[BoardSession, bool]:
    """Context 0 is the farm's session; every other one the same board with an agent of its own
    (a client of its own: one client is one agent and not thread-safe) and, for a link that
    holds a connection, a connection of its own (an SSH link's SFTP channel serves one caller at
    a time). The flag says whether the transport is the context's own to close. A serial
    console carries one resident agent: a second context there is a SoakError."""
    if index == 0:
        return base, False
    transport, own = base.transport, False
    if not isinstance(transport, LocalTransport):
        if base.transport_kind == "serial":
            raise SoakError(
                f"{base.name}: a serial console carries one agent; soak it with one context"
            )
        transport, own = connect(base.board, base.workdir), True
    client = AgentClient(transport, python=base.client.python, keep_jobs=base.client.keep_jobs)
    return dataclasses.replace(base, transport=transport, client=client), own


def _run_context(
    board: _Board,
    session: BoardSession,
    counts: ContextCounts,
    deadline: float | None,
    stop: threading.Event,
) -> None:
    plan = board.plan
    next_sample = time.monotonic() + plan.sample_every_s
    n = counts.jobs
    try:
        while not stop.is_set():
            if plan.iterations is not None and counts.jobs >= plan.iterations:
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            model = plan.models[n % len(plan.models)]
            board.job(session, counts, model, seed=(counts.context << 32) + n)
            n += 1
            if time.monotonic() >= next_sample:
                board.sample(session, counts)
                next_sample = time.monotonic() + plan.sample_every_s
    except BoardBrokenError as exc:
        counts.stopped = f"BoardBrokenError: {exc.message}"
        with board.lock:
            counts.tally("BoardBrokenError")
    except Exception as exc:  # a context's thread must say why it ended, never vanish
        counts.stopped = f"{type(exc).__name__}: {exc}"
        log.exception("%s context %d stopped", counts.board, counts.context)
    board.sample(session, counts)


def _check_plan(plan: SoakPlan) -> None:
    if not plan.models:
        raise SoakError("soak: no model given")
    if plan.contexts < 1:
        raise SoakError(f"soak: contexts must be 1 or more, got {plan.contexts}")
    if (plan.seconds is None) == (plan.iterations is None):
        raise SoakError("soak: give a duration or a number of iterations (one of them)")
    if plan.seconds is not None and not plan.seconds > 0:
        raise SoakError(f"soak: the duration must be more than 0 s, got {plan.seconds}")
    if plan.iterations is not None and plan.iterations < 1:
        raise SoakError(f"soak: iterations must be 1 or more, got {plan.iterations}")
    if not plan.sample_every_s > 0:
        raise SoakError(
            f"soak: the sampling period must be more than 0 s, got {plan.sample_every_s}"
        )
    for model in plan.models:
        try:
            build(model, plan.shape)
        except (NpuHilError, ValueError, KeyError) as exc:
            raise SoakError(f"soak: model {model!r} with shape {plan.shape}: {exc}") from None


def soak(
    farm: Farm,
    boards: Sequence[Board],
    plan: SoakPlan,
    *,
    on_progress: Callable[[SoakRun], None] | None = None,
) -> SoakRun:
    """Soak ``boards`` of ``farm`` as ``plan`` says; returns what happened (judge it with
    :func:`npu_hil.harness.soak.verdict.judge`). ``on_progress`` is called about once a second from
    the calling thread. KeyboardInterrupt stops every context after its current job."""
    _check_plan(plan)
    if not boards:
        raise SoakError("soak: no board selected")
    started = time.monotonic()
    run = SoakRun(plan, [], started=time.time())
    stop = threading.Event()
    primed: list[tuple[_Board, BoardSession, ContextCounts]] = []
    threads: list[threading.Thread] = []
    extra: list[tuple[BoardSession, bool]] = []
    try:
        for board in boards:
            part = BoardSoak(board.name, board.target)
            run.boards.append(part)
            try:
                base = farm.ready(board)
                part.simulated = base.simulated
                contexts = [_context_session(base, index) for index in range(plan.contexts)]
            except NpuHilError as exc:
                part.problem = f"{type(exc).__name__}: {exc.message}"
                continue
            shared = _Board(part, plan, started)
            extra.extend(contexts[1:])
            for index, (session, _) in enumerate(contexts):
                counts = ContextCounts(board.name, index)
                part.contexts.append(counts)
                shared.sample(session, counts)  # starts the agent: the reading before any job
                try:
                    for n, model in enumerate(plan.models):  # priming, one context at a time
                        if plan.iterations is None or counts.jobs < plan.iterations:
                            shared.job(session, counts, model, seed=(index << 32) + n)
                except BoardBrokenError as exc:
                    counts.stopped = f"BoardBrokenError: {exc.message}"
                    break
                primed.append((shared, session, counts))
        # The clock of the run starts once every context is primed.
        deadline = time.monotonic() + plan.seconds if plan.seconds is not None else None
        for shared, session, counts in primed:
            name = f"soak-{counts.board}-{counts.context}"
            args = (shared, session, counts, deadline, stop)
            threads.append(threading.Thread(target=_run_context, args=args, name=name, daemon=True))
            threads[-1].start()
        while any(t.is_alive() for t in threads):
            for thread in threads:
                thread.join(timeout=1.0 / max(1, len(threads)))
            if on_progress is not None:
                run.elapsed_s = time.monotonic() - started
                on_progress(run)
    except KeyboardInterrupt:
        # While the boards were made ready, primed or ran: what ran so far is the soak's report.
        run.interrupted = True
        stop.set()
        for thread in threads:
            thread.join()
    finally:
        stop.set()
        for session, own in extra:
            try:
                session.client.close()
                if own:
                    close_transport(session.transport)
            except NpuHilError as exc:
                log.warning("%s: %s", session.name, exc)
    run.elapsed_s = time.monotonic() - started
    for part in run.boards:
        part.samples.sort(key=lambda s: (s.context, s.t_s))
        part.failures.sort(key=lambda f: f.t_s)
    return run
