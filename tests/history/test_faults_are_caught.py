"""Each performance and accuracy fault of the simulator is caught by the baseline logic on the
board it rigs, and on no other: two clean runs make the baseline, a third with ``--sim-fault``
is compared with it (issue 17, item 6)."""

from __future__ import annotations

import json
from typing import Any

import pytest

INVENTORY = """\
defaults:
  backend: sim
  fallback: sim
boards:
  - {name: rk3588-01, target: rk3588, backend: sim, transport: local}
  - {name: rk3566-01, target: rk3566, backend: sim, transport: local}
"""

TESTS = """
import numpy as np
import pytest

X = {"input": np.random.default_rng(4).integers(0, 256, (1, 3, 8, 8)).astype(np.uint8)}

@pytest.mark.soc("rk3588", "rk3566")
@pytest.mark.parametrize("model", ["identity", "conv3x3"])
def test_case(run_model, model):
    assert run_model(model, X, runs=20, tolerance=1.0).ok
"""


def _latest_summary(project: pytest.Pytester) -> dict[str, Any]:
    root = project.path / "reports"
    runs = sorted(p for p in root.iterdir() if p.is_dir() and p.name[0] != ".")
    summary: dict[str, Any] = json.loads((runs[-1] / "summary.json").read_text())
    summary["records_read"] = [
        json.loads(line) for line in (runs[-1] / summary["records_file"]).read_text().splitlines()
    ]
    return summary


@pytest.fixture
def baselined(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", inventory=INVENTORY)
    pytester.makeini("[pytest]\nnpu_hil_retry_backoff = 0.01\n")
    pytester.makepyfile(TESTS)
    for _ in range(2):
        pytester.runpytest().assert_outcomes(passed=4)
        assert _latest_summary(pytester)["regressions"] == []  # a clean run raises none
    return pytester


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "metrics"),
    [
        ("slow:percent=20", {"p50_ms", "p99_ms"}),
        ("noisy-latency:percent=50,seed=2", {"p99_ms"}),
        ("accuracy-drift:lsb=1,fraction=0.1", {"snr_db"}),
    ],
)
def test_each_fault_is_caught_on_its_board_only(
    baselined: pytest.Pytester, fault: str, metrics: set[str]
) -> None:
    project = baselined
    project.runpytest("--sim-fault", f"rk3588-01={fault}").assert_outcomes(passed=4)
    summary = _latest_summary(project)
    findings = summary["regressions"]
    assert {f["board"] for f in findings} == {"rk3588-01"}, findings
    flagged = {f["nodeid"] for f in findings}
    assert flagged == {r["nodeid"] for r in summary["records_read"] if r["board"] == "rk3588-01"}
    for nodeid in flagged:
        found = {f["metric"] for f in findings if f["nodeid"] == nodeid}
        assert metrics & found, (nodeid, found)
        if fault.startswith("accuracy"):
            assert found <= {"snr_db", "cosine"}, found  # the time is the clean one
        else:
            assert found <= {"p50_ms", "p99_ms"}, found  # the buffers are the clean ones
