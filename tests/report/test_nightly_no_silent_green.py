"""``npu-hil nightly`` never exits 0 on a selection that reached no board: a typo in --target or
--board is a usage error before pytest starts, and a run whose cases all missed their boards is a
failed run with the reason. Over the real plugin and the default (all simulated) inventory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

SUITE = """
import pytest

@pytest.mark.soc("rk3588", "kl730")
def test_on_board(board):
    assert board.simulated
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


@pytest.mark.parametrize(
    ("option", "value", "known"),
    [
        ("--target", "nope", "in inventory.yaml: rk3566, rk3568"),
        ("--board", "nosuch-01", "its boards: rk3566-01, rk3568-01"),
    ],
)
def test_an_unknown_value_is_a_usage_error(
    checkout: Path, option: str, value: str, known: str
) -> None:
    proc = _nightly(checkout, option, value)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{option} {value!r}" in lines[0] and known in lines[0]
    assert not (checkout / "reports").exists()  # nothing started


def test_a_target_without_a_board_is_a_usage_error(checkout: Path) -> None:
    (checkout / "inventory.yaml").write_text(
        "boards:\n  - {name: rk3588-01, target: rk3588, backend: sim, transport: local}\n"
    )
    proc = _nightly(checkout, "--target", "kl730")
    assert proc.returncode == 2
    assert "--target 'kl730': no board of that target in inventory.yaml" in proc.stderr
    assert "its targets: rk3588" in proc.stderr


def test_backend_hw_on_simulated_boards_is_a_failed_run_with_the_reason(checkout: Path) -> None:
    proc = _nightly(checkout, "--backend", "hw")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())
    assert "FAILED RUN: no test reached a board: 2 board cases (2 skipped)" in out
    (run_dir,) = [p for p in (checkout / "reports").iterdir() if p.is_dir()]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["run_failure"].startswith("no test reached a board")
    assert "--backend hw" in summary["run_failure"]
    assert summary["meta"]["pytest_exit"] == 1
    html = (run_dir / "report.html").read_text()
    assert 'class="banner failrun">FAILED RUN: no test reached a board' in html


def test_a_board_of_another_target_reaches_nothing_and_fails(checkout: Path) -> None:
    proc = _nightly(checkout, "--board", "rk3566-01")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAILED RUN" in proc.stdout


def test_a_board_passed_to_pytest_is_checked_by_the_plugin(checkout: Path) -> None:
    proc = _nightly(checkout, "--", "--board", "nosuch-01")
    assert proc.returncode == 4  # pytest's own code for a usage error
    assert "--board 'nosuch-01': no such board" in " ".join(proc.stdout.split())


def test_a_selection_that_reaches_boards_stays_green(checkout: Path) -> None:
    proc = _nightly(checkout, "--target", "rk3588", "--board", "rk3588-01")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = [p for p in (checkout / "reports").iterdir() if p.is_dir()]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["run_failure"] is None and summary["outcomes"]["passed"] == 1
    assert "FAILED RUN" not in (run_dir / "report.html").read_text()
