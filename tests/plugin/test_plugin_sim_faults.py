"""``--sim-fault`` in a pytest run: a bad one is a usage error before anything runs, a good one
rigs exactly that board's jobs, is recorded in summary.json's meta, and leaves the run key alone
(so the rigged run compares with a clean one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

TESTS = """
import numpy as np
import pytest

X = {"input": np.arange(60, dtype=np.uint8).reshape(1, 3, 4, 5)}

@pytest.mark.soc("rk3588", "rk3566")
def test_timed(run_model):
    assert run_model("conv1x1", X, runs=10).ok
"""


def _runs(project: pytest.Pytester) -> list[Path]:
    root = project.path / "reports"
    found = [p for p in root.iterdir() if p.is_dir() and p.name[0] != "."] if root.exists() else []
    return sorted(found)


def _summary(run_dir: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    return summary


def _p50(run_dir: Path) -> dict[str, float]:
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    return {r["board"]: r["latency"]["p50_ms"] for r in map(json.loads, lines)}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--sim-fault", "rk3588-01"], "--sim-fault 'rk3588-01': expected BOARD=FAULT"),
        (["--sim-fault", "rk3588-01=melt"], "unknown fault 'melt'"),
        (["--sim-fault", "rk3588-01=slow:pct=3"], "unknown parameter(s) pct; accepted: percent"),
        (["--sim-fault", "nosuch-01=slow"], "--sim-fault nosuch-01=slow: no such board in "),
        (
            ["--backend", "hw", "--sim-fault", "rk3588-01=slow"],
            "rk3588-01 is not a simulated board: --backend hw runs no simulated board",
        ),
    ],
)
def test_a_bad_sim_fault_is_a_usage_error(
    project: pytest.Pytester, args: list[str], expected: str
) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and expected in errors[0], result.errlines
    assert _runs(project) == []  # nothing ran


def test_a_sim_fault_rigs_its_board_only_and_keeps_the_run_key(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    project.runpytest().assert_outcomes(passed=2)
    project.runpytest("--sim-fault", "rk3588-01=slow:percent=20").assert_outcomes(passed=2)
    clean, rigged = _runs(project)
    clean_meta, rigged_meta = _summary(clean)["meta"], _summary(rigged)["meta"]
    assert rigged_meta["run_key"] == clean_meta["run_key"]
    assert rigged_meta["run_kind"] == clean_meta["run_kind"]
    assert clean_meta["sim_faults"] == []
    assert rigged_meta["sim_faults"] == [
        {"board": "rk3588-01", "fault": {"name": "slow", "percent": 20}}
    ]
    html = (rigged / "report.html").read_text()
    assert "<th>simulated faults</th><td><code>rk3588-01=slow:percent=20</code>" in html
    assert "simulated faults" not in (clean / "report.html").read_text()
    before, after = _p50(clean), _p50(rigged)
    assert after["rk3588-01"] / before["rk3588-01"] == pytest.approx(1.2, rel=0.03)
    assert after["rk3566-01"] == pytest.approx(before["rk3566-01"], rel=0.03)
