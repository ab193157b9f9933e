"""The exports: OpenMetrics text read back by the Prometheus client's own parser, JSON lines."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_hil.harness.history.export import (
    FAMILIES,
    jsonl_lines,
    openmetrics_lines,
    write_export,
)
from npu_hil.harness.history.model import CasePoint, RunEntry
from npu_hil.harness.history.store import History, load_history

parser = pytest.importorskip("prometheus_client.openmetrics.parser")


def openmetrics_text(history: History) -> str:
    return "".join(openmetrics_lines(history))


A = ("rk3588-01", "tests/hil/test_reference.py::test_reference_model[identity-rk3588-01]")
B = ("kl730-01", "tests/hil/test_reference.py::test_reference_model[conv-kl730-01]")


def families(text: str) -> dict[str, Any]:
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def test_every_measurement_parses_with_its_labels_and_run_start(reports: Path, write: Any) -> None:
    index = write(
        {A: ["passed", "failed", "passed"], B: ["passed", "skipped", "passed"]},
        p50=lambda i: 0.075 + 0.005 * i,
        snr=lambda i: "inf" if i == 0 else 40.25,
    )
    text = openmetrics_text(load_history(reports))
    assert text.endswith("# EOF\n")
    found = families(text)
    assert set(found) == {f.name for f in FAMILIES}
    p50 = found["npu_hil_latency_p50_milliseconds"]
    assert p50.type == "gauge" and p50.unit == "milliseconds" and p50.documentation
    # A in 3 runs, B in 2 (skipped once: nothing timed)
    assert len(p50.samples) == 5
    sample = next(
        s for s in p50.samples if s.labels["case"] == A[1] and s.labels["run_id"] == index[2].run_id
    )
    assert sample.labels == {
        "board": "rk3588-01",
        "target": "rk3588",
        "case": A[1],
        "run_id": index[2].run_id,
    }
    assert math.isclose(sample.value, 0.085)
    assert float(sample.timestamp) == index[2].started
    snr = found["npu_hil_accuracy_snr_db"]
    assert snr.unit == "db"
    assert sorted(s.value for s in snr.samples)[-1] == math.inf
    assert "+Inf" in text
    passed = {
        (s.labels["case"], s.labels["run_id"]): s.value
        for s in found["npu_hil_case_passed"].samples
    }
    assert passed[(A[1], index[1].run_id)] == 0.0
    assert passed[(A[1], index[0].run_id)] == 1.0
    assert (B[1], index[1].run_id) not in passed  # skipped: no state


def test_labels_are_escaped_per_the_spec() -> None:
    nasty = 'tests/x.py::test_y[a"b\\c\nd]'
    entry = RunEntry(
        run_id="20261201T020000Z-abcdef", run_key="k", started=1764554400.5, complete=True
    )
    point = CasePoint(
        run_id=entry.run_id,
        nodeid=nasty,
        board="b-1",
        target="t",
        outcome="failed",
        ran_on="sim",
        latency={"p50_ms": 1.5, "runs": 10},
    )
    text = openmetrics_text(History(runs=[entry], points={point.key: [point]}))
    assert 'case="tests/x.py::test_y[a\\"b\\\\c\\nd]"' in text
    found = families(text)
    (sample,) = found["npu_hil_latency_p50_milliseconds"].samples
    assert sample.labels["case"] == nasty
    assert float(sample.timestamp) == 1764554400.5
    (runs,) = found["npu_hil_latency_runs"].samples
    assert runs.value == 10


def test_an_empty_history_is_a_valid_exposition() -> None:
    text = openmetrics_text(History())
    assert text.endswith("# EOF\n")
    assert all(not f.samples for f in families(text).values())


def test_json_lines_one_object_per_case_per_run(reports: Path, write: Any) -> None:
    index = write({A: ["passed", "failed"], B: [None, "passed"]}, snr=lambda i: "inf")
    lines = list(jsonl_lines(load_history(reports)))
    objects = [json.loads(line) for line in lines]
    assert [(o["run_id"], o["board"]) for o in objects] == [
        (index[0].run_id, "rk3588-01"),
        (index[1].run_id, "kl730-01"),
        (index[1].run_id, "rk3588-01"),
    ]
    first = objects[0]
    assert first["nodeid"] == A[1] and first["outcome"] == "passed"
    assert first["run_key"] == "key-nightly" and first["started"] == index[0].started
    assert first["accuracy"]["snr_db"] == "inf"
    assert first["latency"]["p50_ms"] > 0
    out = io.StringIO()
    assert write_export(load_history(reports), "jsonl", out) == 3
    assert out.getvalue() == "".join(lines)
    with pytest.raises(ValueError, match="openmetrics, jsonl"):
        write_export(History(), "csv", out)


@settings(max_examples=200, deadline=None)
@given(
    nodeid=st.text(min_size=1, max_size=40),
    board=st.text(min_size=1, max_size=12),
    started=st.floats(allow_nan=True, allow_infinity=True),
    p50=st.floats(allow_nan=True, allow_infinity=True),
)
def test_prometheus_reads_back_every_label_and_value(
    nodeid: str, board: str, started: float, p50: float
) -> None:
    """Any case id and board name (control characters, quotes, backslashes, CR), any figure and
    any run start (NaN, infinities): Prometheus' own parser reads the exposition back."""
    entry = RunEntry(run_id="r1", run_key="k", started=started, complete=True)
    point = CasePoint(
        run_id="r1",
        nodeid=nodeid,
        board=board,
        target="t",
        outcome="passed",
        ran_on="sim",
        latency={"p50_ms": p50, "runs": 1},
    )
    text = openmetrics_text(History(runs=[entry], points={point.key: [point]}))
    found = families(text)
    (sample,) = found["npu_hil_latency_p50_milliseconds"].samples
    visible = "".join(
        c if (c >= " " and c != "\x7f") or c == "\n" else f"\\x{ord(c):02x}" for c in nodeid
    )
    assert sample.labels["case"] == visible
    assert (sample.timestamp is None) is (not math.isfinite(started))
    assert math.isnan(sample.value) if math.isnan(p50) else sample.value == p50
