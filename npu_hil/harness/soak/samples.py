"""What a soak records: memory samples per board and context, failures, the plan it ran, and
their parts of soak.json (each ``to_dict``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import cast

from typing_extensions import TypedDict


class PlanDocument(TypedDict):
    """soak.json's ``plan`` (``SoakPlan.to_dict``)."""

    models: list[str]
    contexts: int
    seconds: float | None
    iterations: int | None
    sample_every_s: float
    shape: list[int]


class SampleDocument(TypedDict):
    """A memory reading in a board's ``samples`` (``MemorySample.to_dict``)."""

    board: str
    context: int
    t_s: float
    jobs: int
    errors: int
    pid: int | None
    rss_kib: int | None
    hwm_kib: int | None
    cma_free_kib: int | None
    cma_total_kib: int | None
    dmabuf_bytes: int | None


class FailureDocument(TypedDict):
    """A failed job in a board's ``failures`` (``Failure.to_dict``)."""

    board: str
    context: int
    t_s: float
    model: str
    kind: str
    message: str


class ContextDocument(TypedDict):
    """A context's tally in a board's ``contexts`` (``ContextCounts.to_dict``)."""

    board: str
    context: int
    jobs: int
    errors: int
    by_kind: dict[str, int]
    pids: list[int]
    stopped: str | None


@dataclass(frozen=True)
class SoakPlan:
    """``models`` (reference-model names) run in turn on every context of every board, each
    input ``shape``; ``contexts`` agents per board run at once (each its own agent process with
    its own runtime context); the soak ends after ``seconds`` or after ``iterations`` jobs per
    context, whichever is given. ``sample_every_s``: how often each context asks its agent for
    a memory reading (also one before the first job and one after the last)."""

    models: tuple[str, ...]
    contexts: int = 1
    seconds: float | None = None
    iterations: int | None = None
    sample_every_s: float = 10.0
    shape: tuple[int, ...] = (1, 3, 8, 8)

    def to_dict(self) -> PlanDocument:
        data = {**asdict(self), "models": list(self.models), "shape": list(self.shape)}
        return cast(PlanDocument, data)


@dataclass(frozen=True)
class MemorySample:
    """One reading of a context's agent: ``t_s`` since the soak started, ``jobs`` and
    ``errors`` that context had done by then, the agent's ``pid``; KiB figures (None where the
    board does not show them) and the DMA-buffer bytes."""

    board: str
    context: int
    t_s: float
    jobs: int
    errors: int
    pid: int | None
    rss_kib: int | None
    hwm_kib: int | None
    cma_free_kib: int | None
    cma_total_kib: int | None
    dmabuf_bytes: int | None

    def to_dict(self) -> SampleDocument:
        return cast(SampleDocument, asdict(self))


def sample_from(
    memory: Mapping[str, object], *, board: str, context: int, t_s: float, jobs: int, errors: int
) -> MemorySample:
    """A sample from an agent's ``memory`` answer
    (:func:`npu_hil.harness.board.boardstate.read_memory`), each figure checked here."""

    def kib(section: str, key: str) -> int | None:
        found = memory.get(section)
        value = found.get(key) if isinstance(found, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    dmabuf = memory.get("dmabuf")
    raw = dmabuf.get("bytes") if isinstance(dmabuf, dict) else None
    pid = memory.get("pid")
    return MemorySample(
        board=board,
        context=context,
        t_s=round(t_s, 3),
        jobs=jobs,
        errors=errors,
        pid=pid if isinstance(pid, int) else None,
        rss_kib=kib("process", "VmRSS"),
        hwm_kib=kib("process", "VmHWM"),
        cma_free_kib=kib("meminfo", "CmaFree"),
        cma_total_kib=kib("meminfo", "CmaTotal"),
        dmabuf_bytes=raw if isinstance(raw, int) else None,
    )


@dataclass(frozen=True)
class Failure:
    """A job that failed: when, on which context, and why (``kind``: the exception's type or
    ``mismatch`` for wrong buffers)."""

    board: str
    context: int
    t_s: float
    model: str
    kind: str
    message: str

    def to_dict(self) -> FailureDocument:
        return cast(FailureDocument, asdict(self))


@dataclass
class ContextCounts:
    """One context's tally: jobs, failed jobs by kind, the agent pids it saw (a new pid is an
    agent restart), why it stopped early if it did."""

    board: str
    context: int
    jobs: int = 0
    errors: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    pids: list[int] = field(default_factory=list)
    stopped: str | None = None

    def tally(self, kind: str) -> None:
        """One more job; ``kind``: why it failed, "" when it did not."""
        self.jobs += 1
        if kind:
            self.errors += 1
            self.by_kind[kind] = self.by_kind.get(kind, 0) + 1

    def to_dict(self) -> ContextDocument:
        return cast(ContextDocument, asdict(self))
