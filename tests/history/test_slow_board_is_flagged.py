"""The issue's proof, end to end: nightlies on the default inventory into one reports folder; the
clean ones raise no regression, and one with ``--sim-fault rk3588-01=slow:percent=20`` flags
exactly that board's cases (every one of them, nothing else) against the baseline of the clean
runs. A simulated board's latency is its modeled device time, so the clean runs agree with one
another however loaded this machine is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SLOWED = "rk3588-01"

SUITE = """
import numpy as np
import pytest

from npu_hil.targets.rockchip import default_first_layer


def _input(board, shape):
    if board.board.vendor != "rockchip":
        dtype = np.float32
    else:
        dtype = np.float16 if default_first_layer(board.target) == "float16" else np.uint8
    rng = np.random.default_rng(sum(shape))
    if dtype == np.uint8:
        return rng.integers(0, 256, size=shape).astype(dtype)
    return (rng.standard_normal(shape) * 2).astype(dtype)


@pytest.mark.parametrize("model", ["identity", "conv1x1"])
def test_case(run_model, board, model):
    result = run_model(model, {"input": _input(board, (1, 3, 4, 6))}, tolerance=1.0, runs=3)
    assert result.ok, result.summary()
"""


def _nightly(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "npu_hil.harness.cli.main",
            "nightly",
            "--inventory",
            str(REPO / "inventory.yaml"),
            "--suite",
            "tests/hil",
            "--reports",
            "reports",
            "-n",
            "2",
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )


def _summaries(cwd: Path) -> list[dict[str, Any]]:
    runs = sorted(p for p in (cwd / "reports").iterdir() if p.is_dir() and p.name[0] != ".")
    summaries = [json.loads((run / "summary.json").read_text()) for run in runs]
    for run, summary in zip(runs, summaries, strict=True):
        text = (run / summary["records_file"]).read_text()
        summary["records_read"] = [json.loads(line) for line in text.splitlines()]
    return summaries


def test_a_slowed_board_is_flagged_and_only_it(tmp_path: Path) -> None:
    suite = tmp_path / "tests" / "hil"
    suite.mkdir(parents=True)
    (suite / "test_suite.py").write_text(SUITE)
    for args in ([], [], ["--sim-fault", f"{SLOWED}=slow:percent=20"]):
        done = _nightly(tmp_path, *args)
        assert done.returncode == 0, done.stdout + done.stderr
    first, repeat, rigged = _summaries(tmp_path)
    assert {s["meta"]["run_key"] for s in (first, repeat, rigged)} == {first["meta"]["run_key"]}
    boards = set(first["per_board"])
    assert len(boards) == 15 and first["total"] == 30  # every board of the default inventory
    assert first["regressions"] == [], first["regressions"]
    assert repeat["regressions"] == [], repeat["regressions"]

    assert rigged["meta"]["sim_faults"] == [
        {"board": SLOWED, "fault": {"name": "slow", "percent": 20}}
    ]
    assert rigged["history"]["baseline_runs"]  # compared with the clean runs
    slowed_cases = {r["nodeid"] for r in rigged["records_read"] if r["board"] == SLOWED}
    assert len(slowed_cases) == 2
    findings = rigged["regressions"]
    assert {f["board"] for f in findings} == {SLOWED}, findings
    assert {f["nodeid"] for f in findings} == slowed_cases
    for nodeid in slowed_cases:
        metrics = {f["metric"] for f in findings if f["nodeid"] == nodeid}
        assert "p50_ms" in metrics, findings  # latency, not accuracy: the buffers are the same
        assert metrics <= {"p50_ms", "p99_ms"}, findings
    assert all(f["severity"] in ("warning", "noisy") for f in findings)  # no perf marker
    assert all("p50_ms" in f["message"] or "p99_ms" in f["message"] for f in findings)
    assert rigged["outcomes"]["passed"] == 30  # a warning, not a failure
