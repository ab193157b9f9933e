"""The baseline in a pytest run: a second run of a suite is compared with the first, a clean
run flags nothing, a slower one is flagged (a perf test fails, a plain test warns), and a run
whose board moved during its timed runs is reported as noisy, not failed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

TESTS = """
import numpy as np
import pytest

X = {"input": np.arange(60, dtype=np.uint8).reshape(1, 3, 4, 5)}

@pytest.mark.soc("rk3588")
@pytest.mark.perf(runs=3)
def test_perf(run_model):
    run_model("identity", X)

@pytest.mark.soc("rk3588")
def test_plain(run_model):
    run_model("identity", X, runs=3)
"""

# The suite's conftest.py for the noisy run: the board's state as if thermal_zone0 warmed by
# 7 °C during the timed runs (a simulated board reads no sysfs, so it is doctored here).
NOISY_CONFTEST = """
import dataclasses

import pytest

import npu_hil.harness.pipeline as pipeline

ZONE = {"zone": "thermal_zone0", "type": "soc-thermal", "temp_mc": 45000}
STATE = {"before": {"thermal": [ZONE]}, "after": {"thermal": [{**ZONE, "temp_mc": 52000}]}}


@pytest.fixture(autouse=True)
def warming_board(monkeypatch):
    real = pipeline.run_model

    def run_model(*args, **kwargs):
        return dataclasses.replace(real(*args, **kwargs), board_state=STATE)

    monkeypatch.setattr(pipeline, "run_model", run_model)
"""


def _runs(project: pytest.Pytester) -> list[Path]:
    return sorted(p for p in (project.path / "reports").glob("*T*Z-*") if p.is_dir())


def _summary(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    return data


def _records(run_dir: Path) -> dict[str, dict[str, Any]]:
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    return {r["nodeid"].split("::")[-1]: r for r in map(json.loads, lines)}


def _slow_down_the_first(run_dir: Path, factor: float) -> None:
    """Rewrite the first run's measurements as if every case had been ``factor`` times faster."""
    path = run_dir / "measurements.json"
    doc = json.loads(path.read_text())
    for case in doc["cases"]:
        for figure in ("p50_ms", "p90_ms", "p99_ms", "min_ms", "max_ms"):
            case["latency"][figure] /= factor
    path.write_text(json.dumps(doc))


def test_a_second_clean_run_has_a_baseline_and_no_regression(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    # A wide band: the simulated board's latency is the host's wall time here, which a loaded
    # machine spreads by more than the default 10 %; only the wiring is under test.
    project.runpytest("--baseline-floor", "2000").assert_outcomes(passed=2)
    (first,) = _runs(project)
    first_summary = _summary(first)
    assert first_summary["history"] == {"baseline_runs": [], "indexed_runs": 1}
    assert first_summary["regressions"] == []
    kept = json.loads((first / "measurements.json").read_text())
    assert kept["complete"] and kept["run_key"] == first_summary["meta"]["run_key"]
    assert {c["nodeid"].split("::")[-1] for c in kept["cases"]} == {
        "test_perf[rk3588-01]",
        "test_plain[rk3588-01]",
    }
    assert all(c["latency"]["runs"] == 3 for c in kept["cases"])

    result = project.runpytest("--baseline-floor", "2000", "--history-keep", "5")
    result.assert_outcomes(passed=2)
    assert "regression finding" not in result.stdout.str()
    first, second = _runs(project)
    summary = _summary(second)
    assert summary["history"] == {"baseline_runs": [first.name], "indexed_runs": 2}
    assert summary["regressions"] == []
    assert all(r["regressions"] == [] for r in _records(second).values())
    index = json.loads((project.path / "reports" / "history.json").read_text())
    assert index["keep"] == 5 and [r["run_id"] for r in index["runs"]] == [first.name, second.name]


def test_a_slower_run_fails_its_perf_test_and_warns_for_the_plain_one(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(TESTS)
    project.runpytest().assert_outcomes(passed=2)
    (first,) = _runs(project)
    _slow_down_the_first(first, 1000.0)

    result = project.runpytest("--junitxml=junit.xml")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "regression against the baseline: rk3588-01" in out
    assert "npu-hil: 2 regression findings against the baseline (1 failing, 1 warnings" in out
    _, second = _runs(project)
    records = _records(second)
    perf, plain = records["test_perf[rk3588-01]"], records["test_plain[rk3588-01]"]
    assert perf["outcome"] == "failed" and plain["outcome"] == "passed"
    assert "p50_ms" in perf["message"] and f"from 1 run: {first.name}" in perf["message"]
    assert [(f["metric"], f["severity"]) for f in perf["regressions"]] == [("p50_ms", "failure")]
    assert [(f["metric"], f["severity"]) for f in plain["regressions"]] == [("p50_ms", "warning")]
    (warning,) = plain["regressions"]
    assert warning["value"] == plain["latency"]["p50_ms"] > warning["band"]["high"]
    assert warning["band"]["runs"] == [first.name]
    assert "above its baseline" in warning["message"]

    summary = _summary(second)
    assert summary["history"]["baseline_runs"] == [first.name]
    assert sorted((f["nodeid"].split("::")[-1], f["severity"]) for f in summary["regressions"]) == [
        ("test_perf[rk3588-01]", "failure"),
        ("test_plain[rk3588-01]", "warning"),
    ]
    for name, path in (
        ("npu_hil.regression.p50_ms", project.path / "junit.xml"),
        ("regression.p50_ms", second / "junit.xml"),
    ):
        case = ET.parse(path).find(".//testcase[@name='test_plain[rk3588-01]']")
        assert case is not None
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props[name].startswith("warning: rk3588-01 "), props

    # --no-baseline: nothing compared, nothing fails, the run is still kept
    project.runpytest("--no-baseline").assert_outcomes(passed=2)
    third = _runs(project)[-1]
    assert _summary(third)["history"] == {"baseline_runs": [], "indexed_runs": 3}


def test_a_noisy_board_is_reported_as_noisy_not_failed(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    project.runpytest().assert_outcomes(passed=2)
    (first,) = _runs(project)
    _slow_down_the_first(first, 1000.0)
    project.makeconftest(NOISY_CONFTEST)

    result = project.runpytest()
    result.assert_outcomes(passed=2)
    assert "(0 failing, 0 warnings, 2 noisy)" in result.stdout.str()
    _, second = _runs(project)
    for record in _records(second).values():
        (finding,) = record["regressions"]
        assert finding["severity"] == "noisy"
        assert "noisy, not failing: thermal_zone0 rose 7.0 °C during the runs" in finding["message"]
    kept = json.loads((second / "measurements.json").read_text())
    assert all(c["noisy"] == "thermal_zone0 rose 7.0 °C during the runs" for c in kept["cases"])


def test_xdist_workers_compare_with_the_controllers_runs(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    project.makepyfile(TESTS)
    project.runpytest().assert_outcomes(passed=2)
    (first,) = _runs(project)
    _slow_down_the_first(first, 1000.0)
    result = project.runpytest_subprocess("-n", "2", "-p", "xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    _, second = _runs(project)
    summary = _summary(second)
    assert summary["history"] == {"baseline_runs": [first.name], "indexed_runs": 2}
    assert sorted(f["severity"] for f in summary["regressions"]) == ["failure", "warning"]


def test_only_complete_runs_of_the_same_kind_are_baselines(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS + "\n@pytest.mark.soc('rk3588')\ndef test_zfail(board):\n    1/0\n")
    project.runpytest("-x").assert_outcomes(passed=2, failed=1)  # stopped: not complete
    project.runpytest("-k", "test_plain").assert_outcomes(passed=1)  # another selection
    stopped, other = _runs(project)
    index = json.loads((project.path / "reports" / "history.json").read_text())
    assert [(r["run_id"], r["complete"]) for r in index["runs"]] == [
        (stopped.name, False),
        (other.name, True),
    ]
    wide = ("--baseline-floor", "2000")  # the host's wall time: see the clean run's test
    project.runpytest(*wide).assert_outcomes(passed=2, failed=1)
    third = _runs(project)[-1]
    assert _summary(third)["history"] == {"baseline_runs": [], "indexed_runs": 3}
    project.runpytest(*wide).assert_outcomes(passed=2, failed=1)
    assert _summary(_runs(project)[-1])["history"]["baseline_runs"] == [third.name]


ACCURACY_TESTS = """
import numpy as np
import pytest

X = {"input": np.arange(60, dtype=np.uint8).reshape(1, 3, 4, 5)}

@pytest.mark.soc("rk3588")
def test_plain(run_model):
    run_model("identity", X)

@pytest.mark.soc("rk3588")
@pytest.mark.accuracy(snr_db_min=10.0)
def test_with_thresholds(run_model):
    run_model("identity", X)
"""


def test_an_accuracy_drop_warns_and_fails_a_test_with_thresholds(project: pytest.Pytester) -> None:
    project.makepyfile(ACCURACY_TESTS)
    wide = ("--baseline-floor", "2000")  # latency is not under test here
    project.runpytest(*wide).assert_outcomes(passed=2)
    (first,) = _runs(project)
    path = first / "measurements.json"
    doc = json.loads(path.read_text())
    assert all(isinstance(c["accuracy"]["snr_db"], float) for c in doc["cases"])
    for case in doc["cases"]:
        case["accuracy"]["snr_db"] = "inf"  # as if the first run had matched exactly
    path.write_text(json.dumps(doc))

    result = project.runpytest(*wide)
    result.assert_outcomes(passed=1, failed=1)
    records = _records(_runs(project)[-1])
    plain, strict = records["test_plain[rk3588-01]"], records["test_with_thresholds[rk3588-01]"]
    assert [(f["metric"], f["severity"]) for f in plain["regressions"]] == [("snr_db", "warning")]
    assert [(f["metric"], f["severity"]) for f in strict["regressions"]] == [("snr_db", "failure")]
    assert strict["outcome"] == "failed" and "below its baseline inf" in strict["message"]
    assert plain["regressions"][0]["band"]["median"] == "inf"


def _exact_first_run(run_dir: Path) -> None:
    """The run's measurements as if every case had matched exactly (SNR "inf"): any later
    figure of the same case compared with it is a drop."""
    path = run_dir / "measurements.json"
    doc = json.loads(path.read_text())
    for case in doc["cases"]:
        case["accuracy"]["snr_db"] = "inf"
    path.write_text(json.dumps(doc))


def test_a_test_with_new_inputs_starts_a_new_baseline_and_says_so(
    project: pytest.Pytester,
) -> None:
    wide = ("--baseline-floor", "2000")
    project.makepyfile(test_changed_inputs=ACCURACY_TESTS)
    project.runpytest(*wide).assert_outcomes(passed=2)
    (first,) = _runs(project)
    _exact_first_run(first)
    subjects = {
        c["nodeid"]: c["subject"]
        for c in json.loads((first / "measurements.json").read_text())["cases"]
    }
    assert all(len(s) == 32 for s in subjects.values()), subjects

    # The same tests fed other inputs: before, "snr_db ... below its baseline inf" (a failure
    # for the test with thresholds); now a new baseline, named on the console and in the JUnit.
    changed = ACCURACY_TESTS.replace("np.arange(60,", "(np.arange(60) * 3 % 251).astype(")
    project.makepyfile(test_changed_inputs=changed.replace("dtype=np.uint8)", "np.uint8)"))
    xml = project.path / "junit.xml"
    result = project.runpytest(*wide, f"--junitxml={xml}")
    result.assert_outcomes(passed=2)
    second = _runs(project)[-1]
    records = _records(second)
    for name in ("test_plain[rk3588-01]", "test_with_thresholds[rk3588-01]"):
        record = records[name]
        assert record["regressions"] == [], record["regressions"]
        assert record["baseline_note"].startswith("new baseline: its model or inputs changed")
        assert first.name in record["baseline_note"]
        assert record["subject"] != subjects[record["nodeid"]]
    result.stdout.fnmatch_lines(["*npu-hil: 2 cases start a new baseline (model or inputs*"])
    props = {p.get("name"): p.get("value") for p in ET.parse(xml).getroot().iter("property")}
    assert props["npu_hil.baseline"].startswith("new baseline:")
    own = {p.get("name"): p.get("value") for p in ET.parse(second / "junit.xml").iter("property")}
    assert own["baseline"] == props["npu_hil.baseline"]

    # A third run of the same inputs is compared with the second run alone.
    _exact_first_run(second)
    result = project.runpytest(*wide)
    result.assert_outcomes(passed=1, failed=1)
    records = _records(_runs(project)[-1])
    for record in records.values():
        assert record["baseline_note"] == ""
        (finding,) = record["regressions"]
        assert finding["metric"] == "snr_db" and finding["band"]["runs"] == [second.name]
