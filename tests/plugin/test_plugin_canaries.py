"""The canary findings in the reports, end to end under pytest on simulated boards: the
``unwritten`` and ``stale`` verdicts reach the record, JUnit, summary.json and the HTML through
the tensor findings, ``--stale-check`` runs every model twice, and clean runs stay green."""

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
def test_unwritten(run_model):
    assert_run_ok(run_model("conv3x3", X, faults=["unwritten-output"]))

@pytest.mark.soc("rk3588")
def test_stale(run_model):
    assert_run_ok(run_model("conv3x3", X, faults=["stale-output"]))
"""


def _records(project: pytest.Pytester) -> tuple[Path, dict[str, dict]]:
    reports = (project.path / "reports").iterdir()
    (run,) = [p for p in reports if p.is_dir() and not p.name.startswith(".")]
    lines = (run / "records.jsonl").read_text().splitlines()
    return run, {r["nodeid"].split("::")[-1].split("[")[0]: r for r in map(json.loads, lines)}


def test_without_the_stale_check_a_stale_first_job_passes(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest("-k", "not unwritten")
    result.assert_outcomes(passed=2)


def test_unwritten_and_stale_reach_every_report(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest("--stale-check", "--junitxml=junit.xml")
    result.assert_outcomes(passed=1, failed=2)
    run_dir, records = _records(project)

    clean = records["test_clean"]
    assert clean["outcome"] == "passed"
    names = [t["name"] for t in clean["tensors"]]
    assert names == ["input", "output", "input (stale check)", "output (stale check)"]
    assert {t["verdict"] for t in clean["tensors"]} == {"equal"}

    unwritten = records["test_unwritten"]
    verdicts = {t["name"]: t["verdict"] for t in unwritten["tensors"]}
    assert verdicts["output"] == "unwritten" and verdicts["input"] == "equal"
    assert "bytes unwritten" in unwritten["longrepr"]

    stale = records["test_stale"]
    out = next(t for t in stale["tensors"] if t["name"] == "output")
    # The first job is right (a stale runtime's first is); the second came back the same.
    assert out["verdict"] == "stale" and "byte diff: equal" in out["summary"]
    second = next(t for t in stale["tensors"] if t["name"] == "output (stale check)")
    assert second["verdict"] == "different"
    assert "came back byte for byte the same" in out["summary"]

    case = ET.parse(run_dir / "junit.xml").find(".//testcase[@name='test_unwritten[rk3588-01]']")
    assert case is not None and case.find("failure") is not None
    assert json.loads((run_dir / "summary.json").read_text())["records_file"] == "records.jsonl"
    by_id = {
        r["nodeid"].split("::")[-1]: r
        for r in [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    }
    assert by_id["test_stale[rk3588-01]"]["tensors"][1]["verdict"] == "stale"
    html = (run_dir / "report.html").read_text()
    assert "unwritten" in html and "stale" in html
