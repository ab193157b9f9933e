"""``npu-hil nightly --sim-fault``: passed through to pytest, listed in the summary's meta, no
part of the run key; a bad one is one line and exit 2 before pytest starts. Over the real plugin
and the default (all simulated) inventory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

SUITE = """
import numpy as np
import pytest

@pytest.mark.soc("rk3588", "kl730")
def test_on_board(run_model, board):
    x = np.arange(60, dtype=np.int8 if board.target == "kl730" else np.uint8).reshape(1, 3, 4, 5)
    assert run_model("identity", {"input": x}, tolerance=1.0).ok
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    suite = tmp_path / "tests" / "hil"
    suite.mkdir(parents=True)
    (suite / "test_suite.py").write_text(SUITE)
    shutil.copy(Path(__file__).parents[2] / "inventory.yaml", tmp_path / "inventory.yaml")
    return tmp_path


def _nightly(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "npu_hil.harness.cli.main", "nightly", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )


def _summaries(cwd: Path) -> list[dict[str, Any]]:
    runs = sorted(p for p in (cwd / "reports").iterdir() if p.is_dir() and p.name[0] != ".")
    return [json.loads((run / "summary.json").read_text()) for run in runs]


def test_a_nightly_records_its_sim_faults_and_keeps_its_run_key(checkout: Path) -> None:
    clean = _nightly(checkout)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    rigged = _nightly(
        checkout,
        "--sim-fault",
        "rk3588-01=slow:percent=20",
        "--sim-fault",
        "kl730-01=accuracy-drift",
    )
    assert rigged.returncode == 0, rigged.stdout + rigged.stderr
    first, second = _summaries(checkout)
    assert first["meta"]["sim_faults"] == []
    assert second["meta"]["sim_faults"] == [
        {"board": "rk3588-01", "fault": {"name": "slow", "percent": 20}},
        {"board": "kl730-01", "fault": {"name": "accuracy-drift"}},
    ]
    assert second["meta"]["run_key"] == first["meta"]["run_key"]
    assert "--sim-fault" in second["meta"]["command_line"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("rk3588-01", "--sim-fault 'rk3588-01': expected BOARD=FAULT[:key=value,...]"),
        ("rk3588-01=melt", "unknown fault 'melt'"),
        ("nosuch-01=slow", "--sim-fault nosuch-01=slow: no such board in inventory.yaml"),
    ],
)
def test_a_bad_sim_fault_is_one_line_and_exit_2(checkout: Path, value: str, expected: str) -> None:
    proc = _nightly(checkout, "--sim-fault", value)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert expected in lines[0]
    assert not (checkout / "reports").exists()  # nothing started


def test_a_sim_fault_for_a_hardware_only_run_is_refused(checkout: Path) -> None:
    proc = _nightly(checkout, "--backend", "hw", "--sim-fault", "rk3588-01=slow")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "rk3588-01 is not a simulated board: --backend hw" in proc.stderr
