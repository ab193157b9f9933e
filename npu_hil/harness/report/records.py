"""What the plugin records for each test, and the reports are built from: plain data, JSON
round-trippable (a crashed run leaves readable records; xdist workers hand them over)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from functools import lru_cache
from typing import Any, cast

from typing_extensions import TypedDict

from npu_hil.harness.redact import scrub
from npu_hil.harness.report.sanitize import clean_text

OUTCOMES = ("passed", "failed", "error", "skipped")
QUARANTINED = "quarantined"
"""The outcome of a listed test that failed: reported, never failing the run (not one of
:data:`OUTCOMES`, whose four columns every table keeps)."""
NO_BOARD = "(no board)"
"""The row of the cases no board of the inventory serves, in every per-board table."""


class TensorDocument(TypedDict):
    """One tensor of a record's ``tensors`` (:meth:`TensorFinding.to_dict`)."""

    name: str
    role: str
    verdict: str
    summary: str
    heatmap: str | None
    attribute_findings: list[str]
    accuracy: dict[str, Any] | None
    accuracy_breaches: list[str]
    accuracy_note: str


class BandDocument(TypedDict):
    """A finding's baseline band (``npu_hil.harness.history.model.Band``)."""

    metric: str
    median: float | str
    low: float | str
    high: float | str
    mad: float | str
    k: float
    runs: list[str]


class FindingDocument(TypedDict):
    """A figure outside its baseline's band, as a record's ``regressions`` and summary.json hold
    it (``npu_hil.harness.history.baseline.finding_dict``; infinities as ``"inf"``)."""

    board: str
    nodeid: str
    metric: str
    value: float | str
    band: BandDocument
    severity: str
    message: str


class LogExcerptDocument(TypedDict, total=False):
    """One log's excerpt in a record's ``board_log`` (the agent's ``LogExcerpt.to_dict`` cut to
    the newest lines): where it was read, its lines, why it was not, what was dropped."""

    source: str
    lines: list[str]
    why: str
    dropped: int
    lost: int
    level: int
    env: str


# Functional form: "class" is a keyword. Every key optional: a record whose test ran no model
# holds {}.
BoardLogDocument = TypedDict(
    "BoardLogDocument",
    {
        "class": str,
        "matches": list[dict[str, str]],
        "kernel": LogExcerptDocument,
        "runtime": LogExcerptDocument,
        "attempts": list[int],
        "of_attempts": int,
    },
    total=False,
)
"""A record's ``board_log`` (``npu_hil.harness.pipeline.boardlog.LogFinding.to_dict``): the
class, the signatures matched and each log's excerpt (``lines``, ``source``, ``why``...)."""


@dataclass
class TensorFinding:
    """One diffed tensor of a test: its verdict, summary and, when it failed, a heatmap PNG
    (a path relative to the run's report folder)."""

    name: str
    role: str
    verdict: str
    summary: str
    heatmap: str | None = None
    attribute_findings: list[str] = field(default_factory=list)
    accuracy: dict[str, Any] | None = None
    """An output's figures against the float reference (``Accuracy.to_dict``: cosine, snr_db,
    max_abs_err, max_rel_err, elements; infinities as ``"inf"``), None for an input."""
    accuracy_breaches: list[str] = field(default_factory=list)
    """The accuracy thresholds the output failed (only those a test or the manifest set)."""
    accuracy_note: str = ""
    """Why an output has no figures (its buffer could not be dequantized)."""

    def accuracy_text(self) -> str:
        """``cosine 0.999812, SNR 41.3 dB, max abs 0.0123, max rel 0.0456``, ``""`` without
        figures (each value's type checked: a record read back may hold anything there)."""
        figures = self.accuracy
        if not figures:
            return ""
        cosine = figures.get("cosine")
        snr = figures.get("snr_db")
        rel = figures.get("max_rel_err")
        cos_text = f"{cosine:.6f}" if isinstance(cosine, float) else "n/a"
        if isinstance(snr, str):
            snr_text = f"{'+' if snr == 'inf' else ''}{snr} dB"
        else:
            snr_text = f"{snr:.1f} dB" if isinstance(snr, (int, float)) else "n/a"
        return (
            f"cosine {cos_text}, SNR {snr_text}, max abs {_num(figures.get('max_abs_err'))}, "
            f"max rel {_num(rel)}"
        )


def _num(value: Any) -> str:
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    return "n/a" if value is None else str(value)


def accuracy_properties(tensors: list[TensorFinding]) -> dict[str, str]:
    """JUnit properties for each output's figures: ``accuracy.<name>.cosine`` (``undefined``
    for an all-zero tensor), ``.snr_db`` (``inf`` for an exact match), ``.max_abs_err``,
    ``.max_rel_err``, and ``.breaches`` when a threshold failed."""
    props: dict[str, str] = {}
    for tensor in tensors:
        if tensor.accuracy is None:
            continue
        key = f"accuracy.{tensor.name}"
        for figure in ("cosine", "snr_db", "max_abs_err", "max_rel_err"):
            value = tensor.accuracy.get(figure)
            props[f"{key}.{figure}"] = "undefined" if value is None else str(value)
        if tensor.accuracy_breaches:
            props[f"{key}.breaches"] = "; ".join(tensor.accuracy_breaches)
    return props


class RecordDocument(TypedDict):
    """One line of records.jsonl: :meth:`TestRecord.to_dict`, read back by the report, the
    history and the comparison (:meth:`TestRecord.from_dict`)."""

    nodeid: str
    outcome: str
    duration_s: float
    board: str | None
    target: str | None
    backend: str | None
    simulated: bool
    message: str
    longrepr: str
    runtime_versions: dict[str, str]
    artifact_hashes: dict[str, str]
    tensors: list[TensorDocument]
    properties: dict[str, str]
    boot_log: str
    ran_on: str | None
    layout: str
    board_events: list[str]
    retried: list[str]
    latency: dict[str, Any]
    board_state: dict[str, Any]
    regressions: list[FindingDocument]
    unstable: str
    quarantine: dict[str, str]
    cross_api: str
    preprocessing: str
    board_log: BoardLogDocument
    subject: str
    baseline_note: str


@dataclass
class TestRecord:
    """One test on one board: pytest's ``nodeid`` (the board in its parameter id), ``simulated``
    whenever a simulated backend ran it (a fallback included), ``ran_on`` where it really ran
    (``"hw"``, ``"sim"``, ``""`` for neither: skipped, or its board unreachable), the board's
    health events it met, each infrastructure error a retry was paid for (so a pass on the
    second try still shows the first), and ``properties`` for the JUnit XML."""

    __test__ = False  # a record, not a test class pytest should try to collect

    nodeid: str
    outcome: str
    duration_s: float
    board: str | None = None
    target: str | None = None
    backend: str | None = None
    simulated: bool = False
    message: str = ""
    longrepr: str = ""
    runtime_versions: dict[str, str] = field(default_factory=dict)
    artifact_hashes: dict[str, str] = field(default_factory=dict)
    tensors: list[TensorFinding] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    boot_log: str = ""
    ran_on: str | None = None
    layout: str = ""
    board_events: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)
    # the last model run's Latency as a dict, the board's state before and after its timed runs
    latency: dict[str, Any] = field(default_factory=dict)
    board_state: dict[str, Any] = field(default_factory=dict)
    # figures outside their baseline's band (npu_hil.harness.history.model.Regression)
    regressions: list[FindingDocument] = field(default_factory=list)
    # a pass that needed a retry: the first failure's reason (a flag, not an outcome: CI stays
    # green)
    unstable: str = ""
    # the quarantine entry that lists the test (QuarantineEntry.to_dict), whatever its outcome
    quarantine: dict[str, str] = field(default_factory=dict)
    # the cross-API check of its model runs (CrossApi.summary, one line per check)
    cross_api: str = ""
    # how the vendor took each input declared as pixels (ModelRun.preprocessing)
    preprocessing: str = ""
    # the board's own logs in the last model run's job window, classified (LogFinding.to_dict);
    # a class here decided the outcome (infrastructure: an error)
    board_log: BoardLogDocument = field(default_factory=lambda: BoardLogDocument())
    # what its figures are of: its model runs' artifacts and inputs as one digest
    # (history.model.subject_after); baselines compare only runs of the same subject
    subject: str = ""
    # why its figures start a new baseline: the model or the inputs changed since the last run
    baseline_note: str = ""

    @property
    def provenance(self) -> str:
        """``"hw"``, ``"sim"`` or ``""``: a skipped case never counts as either. Records written
        before ``ran_on`` existed are judged from ``simulated`` and the board."""
        if self.outcome == "skipped":
            return ""
        if self.ran_on is not None:
            return self.ran_on
        if self.simulated:
            return "sim"
        return "hw" if self.board is not None else ""

    def to_dict(self) -> RecordDocument:
        return cast(RecordDocument, asdict(self))

    @classmethod
    def from_dict(cls, data: object) -> TestRecord:
        """The record of a records.jsonl line; TypeError when it is not an object of a record's
        fields (a record written before a field existed takes its default)."""
        if not isinstance(data, dict):
            raise TypeError(f"a record is a JSON object, not {type(data).__name__}")
        found = data.get("tensors", [])
        if not isinstance(found, list) or not all(isinstance(t, dict) for t in found):
            raise TypeError("a record's tensors are a list of objects")
        tensors = [TensorFinding(**t) for t in found]
        return cls(**{**data, "tensors": tensors})


def last_attempts(records: Iterable[TestRecord]) -> list[TestRecord]:
    """One record per test: its last attempt's (a rerun replaces the earlier one), in the order
    of the last attempts, as the report lists them."""
    latest: dict[str, TestRecord] = {}
    for record in records:
        latest.pop(record.nodeid, None)
        latest[record.nodeid] = record
    return list(latest.values())


def scrubbed(record: TestRecord) -> TestRecord:
    """``record`` without secrets (:func:`npu_hil.harness.redact.scrub`) and with text safe to
    write (:func:`npu_hil.harness.report.sanitize.clean_text`), whatever a test's exception said."""
    return TestRecord.from_dict(scrubbed_dict(record))


def scrubbed_dict(record: TestRecord) -> RecordDocument:
    """:func:`scrubbed`'s record as the dict ``to_dict`` would give (what records.jsonl
    holds), made in one walk."""
    return cast(RecordDocument, _scrub_value(record))


SHORT_TEXT = 256
"""Texts up to this length are cleaned once per run and remembered: the names, dtypes, layouts
and attribute keys that thousands of records repeat."""


@lru_cache(maxsize=1 << 16)
def _clean_short(text: str) -> str:
    return clean_text(scrub(text))


def _scrub_value(value: Any) -> Any:
    # A walk of its own rather than asdict() and then a walk: asdict deep-copies every leaf
    # first, half of the time of a run's bookkeeping at 12,000 cases.
    if isinstance(value, str):
        return _clean_short(value) if len(value) <= SHORT_TEXT else clean_text(scrub(value))
    if isinstance(value, dict):
        return {_scrub_value(key): _scrub_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_scrub_value(item) for item in value)
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _scrub_value(getattr(value, f.name)) for f in fields(value)}
    return value
