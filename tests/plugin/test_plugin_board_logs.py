"""The board's own logs under pytest, end to end on simulated boards: an NPU timeout the kernel
logged is the test's error (retried first), an OOM kill a failure, a clean run passes with an
empty kernel delta; the class and the excerpt reach the record, the JUnit properties and
system-out, summary.json and the HTML next to the failure; ``--runtime-log-level`` sets the
runtime's level for every job."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

TESTS = """
import numpy as np
import pytest
from npu_hil.harness.plugin import assert_run_ok

X = {"input": np.random.default_rng(0).integers(0, 255, (1, 3, 6, 7)).astype(np.uint8)}

@pytest.mark.soc("rk3588")
def test_clean(run_model):
    assert_run_ok(run_model("conv3x3", X))

@pytest.mark.soc("rk3588")
def test_timeout(run_model):
    assert_run_ok(run_model("conv3x3", X, faults=["npu-timeout"]))

@pytest.mark.soc("rk3588")
def test_oom(run_model):
    assert_run_ok(run_model("conv3x3", X, faults=["oom-kill"]))
"""


def _run_dir(project: pytest.Pytester) -> Path:
    (run,) = [p for p in (project.path / "reports").iterdir() if p.is_dir() and p.name[0] != "."]
    return run


def _records(run: Path) -> dict[str, dict]:
    lines = (run / "records.jsonl").read_text().splitlines()
    return {r["nodeid"].split("::")[-1].split("[")[0]: r for r in map(json.loads, lines)}


def test_board_logs_decide_the_outcome_and_reach_every_report(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest("--junitxml=junit.xml", "--runtime-log-level=3")
    result.assert_outcomes(passed=1, failed=1, errors=1)
    run = _run_dir(project)
    records = _records(run)

    clean = records["test_clean"]
    assert clean["outcome"] == "passed"
    assert clean["board_log"]["class"] == ""
    assert clean["board_log"]["kernel"] == {"source": "kmsg", "lines": []}
    assert clean["board_log"]["runtime"]["level"] == 3
    assert any(x.startswith("I sim: run") for x in clean["board_log"]["runtime"]["lines"])

    timeout = records["test_timeout"]
    assert timeout["outcome"] == "error"  # infrastructure, not a failure of the test
    assert timeout["retried"] and "RKNPU: job timeout" in timeout["retried"][0]
    assert timeout["board_log"]["class"] == "infrastructure"
    # The signature once, naming the attempts it was logged at (the run and its one retry).
    assert timeout["board_log"]["attempts"] == [1, 2] and timeout["board_log"]["of_attempts"] == 2
    assert timeout["message"].endswith("(on attempts 1 and 2 of 2)")
    assert timeout["retried"][0].startswith("BoardLogError: attempt 1: board log: infrastructure")
    assert "RKNPU: job timeout" in timeout["message"]
    assert any("soft reset" in x for x in timeout["board_log"]["kernel"]["lines"])

    oom = records["test_oom"]
    assert oom["outcome"] == "failed" and oom["retried"] == []
    assert oom["board_log"]["class"] == "compatibility"
    assert oom["board_log"]["matches"][0]["id"] == "oom-killer"

    suite = ET.parse(run / "junit.xml")
    case = suite.find(".//testcase[@name='test_timeout[rk3588-01]']")
    assert case is not None and case.find("error") is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["board_log.class"] == "infrastructure"
    assert props["board_log.signatures"].startswith("rknpu-job-timeout")
    assert props["board_log.kernel"] == "kmsg"
    assert props["board_log.attempts"] == "1,2 of 2"
    out = case.find("system-out")
    assert out is not None and "RKNPU: soft reset" in (out.text or "")

    summary = json.loads((run / "summary.json").read_text())
    logs = summary["board_logs"]
    assert logs["classes"] == {"infrastructure": 1, "compatibility": 1}
    assert {c["nodeid"].split("::")[-1] for c in logs["cases"]} == {
        "test_timeout[rk3588-01]",
        "test_oom[rk3588-01]",
    }

    html = (run / "report.html").read_text()
    assert "RKNPU: job timeout" in html and 'class="b boardlog"' in html
    assert "<mark>" in html  # the matched lines marked in the excerpt


def test_a_clean_suite_has_no_classified_cases(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest("-k", "test_clean")
    result.assert_outcomes(passed=1)
    summary = json.loads((_run_dir(project) / "summary.json").read_text())
    assert summary["board_logs"] == {"classes": {}, "cases": []}
