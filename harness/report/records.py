"""What the plugin records for each test, and what the reports are built from.

Plain data, JSON round-trippable, so a crashed run leaves readable records behind and pytest-xdist
workers can hand them to the controller.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from npu_hil.harness.redact import scrub
from npu_hil.harness.report.sanitize import clean_text

OUTCOMES = ("passed", "failed", "error", "skipped")


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
    # The last model run's latency figures (harness.latency.Latency as a dict) and the board's
    # state before and after its timed runs; empty when the test measured nothing.
    latency: dict[str, Any] = field(default_factory=dict)
    board_state: dict[str, Any] = field(default_factory=dict)

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


def scrubbed(record: TestRecord) -> TestRecord:
    """``record`` with every secret in its text removed (:func:`harness.redact.scrub`) and its
    text made safe to write (:func:`harness.report.sanitize.clean_text`: no lone surrogate, no
    raw control or bidi character): applied where records are written, so records.jsonl, the
    JUnit XML, the HTML page and the summary never hold key material and are always written and
    valid, whatever exception text a test ended with."""
    return TestRecord.from_dict(_scrub_value(record.to_dict()))


def _scrub_value(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(scrub(value))
    if isinstance(value, dict):
        return {_scrub_value(key): _scrub_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub_value(item) for item in value]
    return value
