"""The cross-API check end to end under pytest on simulated boards: ``--cross-api`` runs every
model job through both of the vendor's API paths, ``@pytest.mark.cross_api`` one test; a
disagreement is the ``cross-api`` verdict in the record, JUnit, summary.json and the HTML (naming
both paths and the first differing element); a clean run stays green; Kneron is "not
applicable (one API path)"."""

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
def test_skewed(run_model):
    assert_run_ok(run_model("conv3x3", X, faults=["unaligned-width"]))

@pytest.mark.soc("kl730")
def test_one_path(run_model):
    assert_run_ok(run_model("conv3x3", {"input": X["input"].astype(np.int8)}))
"""

MARKED = """
import numpy as np
import pytest
from npu_hil.harness.plugin import assert_run_ok

X = {"input": np.random.default_rng(0).integers(0, 255, (1, 3, 6, 7)).astype(np.uint8)}

@pytest.mark.cross_api
@pytest.mark.soc("rk3588")
def test_marked(run_model):
    assert_run_ok(run_model("conv3x3", X, faults=["unaligned-width"]))

@pytest.mark.soc("rk3588")
def test_unmarked(run_model):
    assert_run_ok(run_model("conv3x3", X, faults=["unaligned-width"]))
"""


def _records(project: pytest.Pytester) -> tuple[Path, dict[str, dict]]:
    reports = (project.path / "reports").iterdir()
    (run,) = [p for p in reports if p.is_dir() and not p.name.startswith(".")]
    lines = (run / "records.jsonl").read_text().splitlines()
    return run, {r["nodeid"].split("::")[-1].split("[")[0]: r for r in map(json.loads, lines)}


def test_without_the_option_the_fault_goes_unseen(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    project.runpytest().assert_outcomes(passed=3)


def test_cross_api_reaches_every_report(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest("--cross-api", "--junitxml=junit.xml")
    result.assert_outcomes(passed=2, failed=1)
    run_dir, records = _records(project)

    clean = records["test_clean"]
    assert clean["outcome"] == "passed"
    assert {t["verdict"] for t in clean["tensors"]} == {"equal"}
    assert clean["cross_api"].startswith("cross-API check: rknn_native: zero-copy")

    skewed = records["test_skewed"]
    assert skewed["outcome"] == "failed"
    out = next(t for t in skewed["tensors"] if t["name"] == "output")
    assert out["verdict"] == "cross-api" and "byte diff: equal" in out["summary"]
    for words in ("rknn_native (zero-copy, simulated)", "rknnlite (normal API, simulated)"):
        assert words in out["summary"] and words in skewed["longrepr"]
    assert "the first at [0, " in out["summary"]

    one = records["test_one_path"]
    assert one["outcome"] == "passed"
    assert one["cross_api"] == "cross-API check: not applicable (one API path: kneron)"
    (output,) = [t for t in one["tensors"] if t["role"] == "output"]
    assert "not applicable (one API path: kneron)" in output["summary"]

    suite = ET.parse(run_dir / "junit.xml")
    case = suite.find(".//testcase[@name='test_skewed[rk3588-01]']")
    assert case is not None and case.find("failure") is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert "rknnlite: normal API" in (props.get("cross_api") or "")
    single = suite.find(".//testcase[@name='test_one_path[kl730-01]']")
    assert single is not None
    props = {p.get("name"): p.get("value") for p in single.iter("property")}
    assert props["cross_api"] == "cross-API check: not applicable (one API path: kneron)"

    assert json.loads((run_dir / "summary.json").read_text())["records_file"] == "records.jsonl"
    by_id = {
        r["nodeid"].split("::")[-1]: r
        for r in [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    }
    verdicts = {t["name"]: t["verdict"] for t in by_id["test_skewed[rk3588-01]"]["tensors"]}
    assert verdicts == {"input": "equal", "output": "cross-api"}
    html = (run_dir / "report.html").read_text()
    assert "cross-api" in html and "rknnlite (normal API, simulated)" in html
    assert "not applicable (one API path: kneron)" in html


def test_the_marker_checks_one_test(project: pytest.Pytester) -> None:
    project.makepyfile(MARKED)
    result = project.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    _, records = _records(project)
    assert records["test_marked"]["outcome"] == "failed"
    assert records["test_unmarked"]["outcome"] == "passed"
    assert records["test_unmarked"]["cross_api"] == ""
    assert records["test_marked"]["cross_api"].startswith("cross-API check: rknn_native")
