"""Accuracy beside the bytes, end to end on simulated boards: every output's figures against the
float reference in the record, the JUnit properties, summary.json and the HTML; thresholds from
the ``accuracy`` marker or ``run_model(accuracy=...)`` fail a test that breaches them, and
without thresholds the figures are reported only."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

TESTS = """
import numpy as np
import pytest
from npu_hil.harness.plugin import assert_run_ok

X = {"input": np.random.default_rng(0).integers(0, 255, (1, 3, 6, 7)).astype(np.uint8)}

@pytest.mark.soc("rk3588")
def test_reported(run_model):
    assert_run_ok(run_model("conv3x3", X))

@pytest.mark.soc("rk3588")
@pytest.mark.accuracy(cosine_min=0.999, snr_db_min=30)
def test_met(run_model):
    assert_run_ok(run_model("conv3x3", X))

@pytest.mark.soc("rk3588")
@pytest.mark.accuracy(snr_db_min=200)
def test_marker_breach(run_model):
    assert_run_ok(run_model("conv3x3", X))

@pytest.mark.soc("rk3588")
@pytest.mark.accuracy(snr_db_min=200)
def test_argument_overrides_marker(run_model):
    assert_run_ok(run_model("conv3x3", X, accuracy={"snr_db_min": 20}))

@pytest.mark.soc("rk3588")
def test_argument_breach(run_model):
    assert_run_ok(run_model("conv3x3", X, accuracy={"cosine_min": 1.0}))

@pytest.mark.soc("rk3588")
@pytest.mark.accuracy(snr=3)
def test_bad_marker(run_model):
    run_model("conv3x3", X)
"""


def _run_dir(project: pytest.Pytester) -> Path:
    (run,) = [
        p for p in (project.path / "reports").iterdir() if p.is_dir() and not p.name.startswith(".")
    ]
    return run


@pytest.mark.slow
def test_figures_and_thresholds_end_to_end(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest("--junitxml=junit.xml")
    result.assert_outcomes(passed=3, failed=2, errors=1)
    run_dir = _run_dir(project)
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    records = {r["nodeid"].split("::")[-1].split("[")[0]: r for r in map(json.loads, lines)}

    reported = records["test_reported"]
    assert reported["outcome"] == "passed"
    tensor_in, tensor_out = reported["tensors"]
    assert tensor_in["role"] == "input" and tensor_in["accuracy"] is None
    figures = tensor_out["accuracy"]
    # int8 quantization of a 3x3 convolution: close to, never exactly, the float model
    assert 0.999 < figures["cosine"] < 1.0
    assert 30.0 < figures["snr_db"] < 80.0
    assert figures["max_abs_err"] > 0.0 and figures["elements"] == 3 * 6 * 7
    assert tensor_out["verdict"] == "equal" and tensor_out["accuracy_breaches"] == []

    assert records["test_met"]["outcome"] == "passed"
    assert records["test_argument_overrides_marker"]["outcome"] == "passed"
    breach = records["test_marker_breach"]
    assert breach["outcome"] == "failed"
    (message,) = breach["tensors"][1]["accuracy_breaches"]
    assert message.startswith("SNR ") and message.endswith(" dB < 200 dB")
    assert "accuracy output output: SNR" in breach["longrepr"]
    # the bytes were right: the byte diff's verdict is kept beside the accuracy finding
    assert breach["tensors"][1]["verdict"] == "equal"
    argument = records["test_argument_breach"]
    assert argument["outcome"] == "failed" and "cosine" in argument["longrepr"]
    bad = records["test_bad_marker"]
    assert bad["outcome"] == "error" and "unknown key(s) snr" in bad["longrepr"]

    case = ET.parse(project.path / "junit.xml").find(
        ".//testcase[@name='test_reported[rk3588-01]']"
    )
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert float(props["npu_hil.accuracy.output.snr_db"]) == pytest.approx(figures["snr_db"])
    assert float(props["npu_hil.accuracy.output.cosine"]) == pytest.approx(figures["cosine"])
    assert "npu_hil.accuracy.input.snr_db" not in props
    case = ET.parse(run_dir / "junit.xml").find(
        ".//testcase[@name='test_marker_breach[rk3588-01]']"
    )
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["accuracy.output.breaches"] == message

    summary = json.loads((run_dir / "summary.json").read_text())
    in_summary = [
        r
        for r in [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
        if "test_reported" in r["nodeid"]
    ]
    assert in_summary[0]["tensors"][1]["accuracy"] == figures
    # Per target: one output per case that ran a model, the one breached, the lowest figures.
    tensors = [
        t
        for r in map(json.loads, (run_dir / "records.jsonl").read_text().splitlines())
        for t in r["tensors"]
        if t["accuracy"] is not None
    ]
    outputs = [t["accuracy"] for t in tensors]
    row = summary["accuracy"]["rk3588"]
    assert row["outputs"] == len(outputs) == 5
    # the marker's breach and the argument's (which overrides a marker it would have met)
    assert row["breached"] == sum(bool(t["accuracy_breaches"]) for t in tensors) == 2
    assert row["snr_db_min"] == min(o["snr_db"] for o in outputs) <= figures["snr_db"]
    assert row["cosine_min"] == min(o["cosine"] for o in outputs)
    html = (run_dir / "report.html").read_text()
    assert f"accuracy: cosine {figures['cosine']:.6f}, SNR {figures['snr_db']:.1f} dB" in html
    # a passing case's row is folded: its figures stay in view
    assert f"accuracy output: cosine {figures['cosine']:.6f}" in html
    assert "accuracy thresholds failed:" in html and "&lt; 200 dB" in html
    assert math.isfinite(figures["snr_db"])
