"""The ``perf`` marker and latency in the reports: a simulated board times its runs, the figures
reach the record, JUnit, summary.json and the HTML, and a figure over its threshold fails."""

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

X = {"input": np.arange(60, dtype=np.uint8).reshape(1, 3, 4, 5)}

@pytest.mark.soc("rk3588")
@pytest.mark.perf(runs=5, warmup=2)
def test_timed(run_model):
    run = run_model("identity", X)
    assert run.ok and run.latency.runs == 5 and run.latency.warmup == 2

@pytest.mark.soc("rk3588")
@pytest.mark.perf(runs=3, p50_ms=1e-9)
def test_too_slow(run_model):
    run_model("identity", X)

@pytest.mark.soc("rk3588")
@pytest.mark.perf(runs=3, p99_ms=60000)
def test_fast_enough(run_model):
    run_model("identity", X)

@pytest.mark.soc("rk3588")
def test_script_style(run_model):
    run = run_model("identity", X, runs=4)
    assert run.latency.runs == 4
"""


def _run_dir(project: pytest.Pytester) -> Path:
    (run,) = [
        p for p in (project.path / "reports").iterdir() if p.is_dir() and not p.name.startswith(".")
    ]
    return run


def test_perf_marker_figures_reports_and_a_breach(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest("--junitxml=junit.xml")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.re_match_lines(
        [r".*latency over threshold: p50_ms \d+\.\d+ ms > threshold 1e-09 ms.*"]
    )
    run_dir = _run_dir(project)
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    records = {r["nodeid"].split("::")[-1]: r for r in map(json.loads, lines)}
    timed = records["test_timed[rk3588-01]"]
    assert timed["latency"]["runs"] == 5 and timed["latency"]["warmup"] == 2
    lat = timed["latency"]
    assert 0 < lat["min_ms"] <= lat["p50_ms"] <= lat["p90_ms"] <= lat["p99_ms"] <= lat["max_ms"]
    # A simulated board: the figures are modeled, and it reads no board state.
    assert lat["source"] == "modeled" and not timed.get("board_state")
    too_slow = records["test_too_slow[rk3588-01]"]
    assert too_slow["outcome"] == "failed"
    assert "p50_ms" in too_slow["message"] and "threshold 1e-09 ms" in too_slow["message"]
    assert records["test_script_style[rk3588-01]"]["latency"]["runs"] == 4
    summary = json.loads((run_dir / "summary.json").read_text())
    # The summary says it per target; each case's figures are in the measurements file.
    p99s = [r["latency"]["p99_ms"] for r in records.values()]
    assert summary["latency"]["rk3588"]["cases"] == len(records)
    assert summary["latency"]["rk3588"]["p99_ms_max"] == max(p99s)
    measured = json.loads((run_dir / summary["measurements_file"]).read_text())
    points = {c["nodeid"].split("::")[-1]: c for c in measured["cases"]}
    assert points["test_timed[rk3588-01]"]["latency"]["p50_ms"] == lat["p50_ms"]
    case = ET.parse(project.path / "junit.xml").find(".//testcase[@name='test_timed[rk3588-01]']")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["npu_hil.latency.runs"] == "5"
    assert float(props["npu_hil.latency.p99_ms"]) == pytest.approx(lat["p99_ms"], abs=1e-6)
    assert props["npu_hil.latency.source"] == "modeled"
    assert not any(k.startswith("npu_hil.board_state.") for k in props)
    html = (run_dir / "report.html").read_text()
    assert "latency (5 runs, 2 warm-up, modeled)" in html


def test_a_bad_perf_marker_is_an_error_naming_it(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import pytest

        @pytest.mark.soc("rk3588")
        @pytest.mark.perf(runs=0)
        def test_zero(run_model):
            pass

        @pytest.mark.soc("rk3588")
        @pytest.mark.perf(p42_ms=3)
        def test_unknown(run_model):
            pass
        """
    )
    result = project.runpytest()
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*perf(runs=...) expects an integer in [[]1, 10000], got 0*"])
    result.stdout.fnmatch_lines(["*perf(p42_ms=...) is not a figure*"])


def test_pin_clocks_leaves_a_simulated_board_alone(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import numpy as np
        import pytest

        @pytest.mark.soc("rk3588")
        @pytest.mark.perf(runs=2)
        def test_pinned(run_model):
            run = run_model("identity", {"input": np.zeros((1, 3, 4, 5), np.uint8)})
            assert "pinned" not in run.board_state
        """
    )
    project.runpytest("--pin-clocks").assert_outcomes(passed=1)
