"""Every measurement of a history as OpenMetrics text (for Prometheus and Grafana: a gauge family
per figure, a sample per case per run stamped with the run's start) and as JSON lines (one object
per case per run); the families and an example: docs/farm/history.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, cast

from typing_extensions import TypedDict

from npu_hil.harness.history.flaky import figure
from npu_hil.harness.history.model import (
    CasePoint,
    LatencyFigures,
    RunEntry,
    WorstAccuracy,
    strict_json,
)
from npu_hil.harness.history.store import History
from npu_hil.harness.report.compare import outcome_state

PREFIX = "npu_hil_"
FORMATS = ("openmetrics", "jsonl")


@dataclass(frozen=True)
class Family:
    name: str
    unit: str  # "" for a unitless figure
    help: str
    value: Callable[[CasePoint], float | None]


def _latency(field: str) -> Callable[[CasePoint], float | None]:
    return lambda point: figure(point.latency, field)


def _accuracy(field: str) -> Callable[[CasePoint], float | None]:
    return lambda point: figure(point.accuracy, field)


def _passed(point: CasePoint) -> float | None:
    state = outcome_state(point.outcome)
    return None if state is None else float(state == "pass")


FAMILIES: tuple[Family, ...] = (
    *(
        Family(
            f"{PREFIX}latency_{stat}_milliseconds",
            "milliseconds",
            f"{what} of the case's timed runtime calls",
            _latency(f"{stat}_ms"),
        )
        for stat, what in (
            ("p50", "Median (p50)"),
            ("p90", "90th percentile"),
            ("p99", "99th percentile"),
            ("min", "Fastest"),
            ("max", "Slowest"),
            ("mean", "Mean"),
            ("jitter", "Jitter (p99 - p50)"),
        )
    ),
    Family(f"{PREFIX}latency_runs", "", "Number of timed runtime calls", _latency("runs")),
    Family(
        f"{PREFIX}accuracy_snr_db",
        "db",
        "Worst output's SNR against the float reference in dB (+Inf: exact)",
        _accuracy("snr_db"),
    ),
    Family(
        f"{PREFIX}accuracy_cosine",
        "",
        "Worst output's cosine similarity to the float reference",
        _accuracy("cosine"),
    ),
    Family(
        f"{PREFIX}case_passed",
        "",
        "1 when the case passed, 0 when it failed or errored (no sample: skipped)",
        _passed,
    ),
)


def _escape_label(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    # Other control characters have no escape in OpenMetrics: written visibly (a label that
    # reads back as the four characters \x0d), never raw into a scraper or a terminal.
    return "".join(c if c >= " " and c != "\x7f" else f"\\\\x{ord(c):02x}" for c in escaped)


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _ordered(history: History) -> Iterator[tuple[CasePoint, RunEntry]]:
    """Every point with its run, case by case (board, nodeid) and oldest first in each."""
    runs = {entry.run_id: entry for entry in history.runs}
    for key in sorted(history.points):
        for point in history.points[key]:
            entry = runs.get(point.run_id)
            if entry is not None:
                yield point, entry


def openmetrics_lines(history: History) -> Iterator[str]:
    """The OpenMetrics exposition of ``history``, a line at a time (each ends in a newline)."""
    labelled = []
    for point, entry in _ordered(history):
        board, target, case, run = map(
            _escape_label, (point.board, point.target, point.nodeid, entry.run_id)
        )
        labels = f'{{board="{board}",target="{target}",case="{case}",run_id="{run}"}}'
        # A timestamp must be a finite number (Prometheus' parser refuses +Inf and NaN there):
        # a damaged start time leaves the sample without one.
        started = float(entry.started)
        stamp = f" {_number(started)}" if math.isfinite(started) else ""
        labelled.append((point, labels, stamp))
    for family in FAMILIES:
        yield f"# TYPE {family.name} gauge\n"
        if family.unit:
            yield f"# UNIT {family.name} {family.unit}\n"
        help_text = family.help.replace("\\", "\\\\").replace("\n", "\\n")
        yield f"# HELP {family.name} {help_text}\n"
        for point, labels, stamp in labelled:
            value = family.value(point)
            if value is not None:
                yield f"{family.name}{labels} {_number(value)}{stamp}\n"
    yield "# EOF\n"


class ExportRecord(TypedDict):
    """One line of ``npu-hil history export --format jsonl``: a case in a run."""

    run_id: str
    run_key: str
    started: float
    board: str
    target: str
    nodeid: str
    outcome: str
    ran_on: str
    latency: LatencyFigures | None
    accuracy: WorstAccuracy | None
    noisy: str


def _record(point: CasePoint, entry: RunEntry) -> ExportRecord:
    run = {"run_id": entry.run_id, "run_key": entry.run_key, "started": entry.started}
    data = {**point.to_dict(), **run}
    del data["subject"]  # not exported
    return cast(ExportRecord, data)


def jsonl_lines(history: History) -> Iterator[str]:
    """One JSON object per case per run, runs oldest first, cases by board and nodeid."""
    rank = {entry.run_id: i for i, entry in enumerate(history.runs)}
    pairs = sorted(_ordered(history), key=lambda pe: (rank[pe[1].run_id], pe[0].key))
    for point, entry in pairs:
        # the figures stay as the records keep them ("inf" for an exact match): strict JSON
        yield json.dumps(strict_json(_record(point, entry)), sort_keys=True, allow_nan=False) + "\n"


def write_export(history: History, fmt: str, handle: IO[str]) -> int:
    """Write ``history`` as ``fmt`` (one of :data:`FORMATS`) to ``handle``; the lines written."""
    if fmt not in FORMATS:
        raise ValueError(f"export format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    lines = openmetrics_lines(history) if fmt == "openmetrics" else jsonl_lines(history)
    count = 0
    for line in lines:
        handle.write(line)
        count += 1
    return count
