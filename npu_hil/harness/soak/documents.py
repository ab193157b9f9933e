"""soak.json's parts, as :mod:`npu_hil.harness.soak.report` writes them (each part's
``to_dict``)."""

from __future__ import annotations

from typing_extensions import TypedDict

from npu_hil.harness.report.runmeta import RunMeta


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


class BoundsDocument(TypedDict):
    """The verdict's ``bounds`` (``Bounds.to_dict``)."""

    max_leak_kib_per_1k: float | None
    max_leak_kib_per_hour: float | None
    max_error_rate: float
    warmup_share: float
    min_samples: int
    floor_kib: float


class FitDocument(TypedDict):
    """A fitted slope and its 95 % interval (``Fit.to_dict``)."""

    slope: float
    intercept: float
    low: float
    high: float
    points: int


class SeriesDocument(TypedDict):
    """A memory series in the verdict's ``series`` (``SeriesFit.to_dict``)."""

    board: str
    context: int | None
    metric: str
    pid: int | None
    samples: int
    warmup_dropped: int
    kib_per_1k_jobs: FitDocument | None
    kib_per_hour: FitDocument | None
    problem: str | None
    failed: list[str]


class ErrorRate(TypedDict):
    """A board's entry in the verdict's ``error_rates``."""

    jobs: int
    errors: int
    rate: float
    by_kind: dict[str, int]


class VerdictDocument(TypedDict):
    """soak.json's ``verdict`` (``Verdict.to_dict``)."""

    passed: bool
    reasons: list[str]
    bounds: BoundsDocument
    error_rates: dict[str, ErrorRate]
    series: list[SeriesDocument]


class SoakDocument(TypedDict):
    """soak.json (``soak_document``)."""

    schema: str
    started: str
    elapsed_s: float
    interrupted: bool
    plan: PlanDocument
    verdict: VerdictDocument
    boards: list[BoardDocument]
    meta: RunMeta
