"""What the plugin records for each test, and what the reports are built from.

Plain data, JSON round-trippable, so a crashed run leaves readable records behind and pytest-xdist
workers can hand them to the controller.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from functools import lru_cache
from typing import Any

from npu_hil.harness.redact import scrub
from npu_hil.harness.report.sanitize import clean_text

OUTCOMES = ("passed", "failed", "error", "skipped")
QUARANTINED = "quarantined"
"""The outcome of a listed test that failed: reported, never failing the run (not one of
:data:`OUTCOMES`, whose four columns every table keeps)."""


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
        """One line of figures, or ``""`` without them."""
        return accuracy_text(self.accuracy) if self.accuracy else ""


def accuracy_text(figures: dict[str, Any]) -> str:
    """``cosine 0.999812, SNR 41.3 dB, max abs 0.0123, max rel 0.0456`` from the JSON figures."""
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
    return (
        f"{value:.4g}"
        if isinstance(value, (int, float))
        else "n/a"
        if value is None
        else str(value)
    )


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


@dataclass
class TestRecord:
    """One test on one board.

    ``nodeid`` is pytest's id (with the board in the parameter id, e.g. ``[rk3588-01]``);
    ``simulated`` is True whenever a simulated backend ran the test, including a fallback from
    hardware; ``ran_on`` is where the test really ran: ``"hw"`` only when a hardware board ran it,
    ``"sim"`` for a simulated board (a fallback included), ``""`` when it ran on neither (skipped,
    or its board was unreachable); ``layout`` names the NPU layout(s) the case exercised;
    ``board_events`` are the board's health events the test met (a power cycle, a fallback, an
    unhealthy board); ``retried`` holds each infrastructure error a retry was paid for
    (``TransportError: ...``), in order, so a test that passed on its second try still shows
    what went wrong on its first; ``properties`` go into the JUnit XML as ``<property>``
    elements.
    """

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
    # The last model run's latency figures (npu_hil.harness.latency.Latency as a dict) and the
    # board's state before and after its timed runs; empty when the test measured nothing.
    latency: dict[str, Any] = field(default_factory=dict)
    board_state: dict[str, Any] = field(default_factory=dict)
    # Figures outside their baseline's band (npu_hil.harness.history.model.Regression as a dict:
    # board, nodeid, metric, value, band, severity, message); empty when none was, or no baseline.
    regressions: list[dict[str, Any]] = field(default_factory=list)
    # A pass that needed a retry (a model run's, or a rerun of the test): the first failure's
    # reason; "" for a clean pass and for every other outcome. A flag, not an outcome: the test
    # passed, and CI keeps it green.
    unstable: str = ""
    # The quarantine entry that lists the test
    # (npu_hil.harness.farm.quarantine.QuarantineEntry.to_dict: test, reason, expires, entry, and
    # target, board, link where given), whatever its outcome; the outcome is "quarantined" when the
    # listed test failed.
    quarantine: dict[str, str] = field(default_factory=dict)
    # The cross-API check of the test's model runs
    # (npu_hil.harness.pipeline.crossapi.CrossApi.summary, one line per check): the two paths
    # compared, or why it did not apply; "" without it.
    cross_api: str = ""
    # How the vendor took each input declared as pixels (ModelRun.preprocessing, one line per
    # input); "" when the test declared none.
    preprocessing: str = ""
    # The board's own logs in the last model run's job window, classified
    # (npu_hil.harness.pipeline.boardlog.LogFinding.to_dict: class, matches, kernel, runtime); empty
    # when no model ran. A class here decided the outcome (infrastructure: an error).
    board_log: dict[str, Any] = field(default_factory=dict)
    # What the test's figures are figures of: its model runs' artifacts and inputs, one digest
    # (npu_hil.harness.history.points.subject_after); "" when no model ran. Baselines compare
    # only runs of the same subject.
    subject: str = ""
    # Why this run's figures start a new baseline ("" when they are compared with earlier runs
    # or have none before them): the model or the inputs changed since the last run.
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TestRecord:
        tensors = [TensorFinding(**t) for t in data.get("tensors", [])]
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
    """``record`` with every secret in its text removed (:func:`npu_hil.harness.redact.scrub`) and
    its text made safe to write (:func:`npu_hil.harness.report.sanitize.clean_text`: no lone
    surrogate, no raw control or bidi character): applied where records are written, so
    records.jsonl, the JUnit XML, the HTML page and the summary never hold key material and are
    always written and valid, whatever exception text a test ended with."""
    return TestRecord.from_dict(scrubbed_dict(record))


def scrubbed_dict(record: TestRecord) -> dict[str, Any]:
    """:func:`scrubbed`'s record as the dict ``to_dict`` would give (what records.jsonl
    holds), made in one walk."""
    data: dict[str, Any] = _scrub_value(record)
    return data


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
