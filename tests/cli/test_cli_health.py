"""``npu-hil health``: the boards' health kept across runs, read from the files a real farm
wrote (a board whose circuit breaker opened on a SIGKILLed agent), exit 1 while one is bad;
``--clear`` forgets it and the next health check of a farm decides."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.errors import AgentKilledError
from npu_hil.harness.farm import NO_RETRY, BoardBrokenError, Farm
from npu_hil.harness.pipeline import run_model

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

X = {"input": np.zeros((1, 3, 2, 2), dtype=np.uint8)}
INVENTORY = """\
boards:
  - {name: left-01, target: rk3588, backend: hw, fallback: none, adapter: sim,
     python: {python}, transport: local}
  - {name: right-01, target: rk3588, backend: hw, fallback: none, adapter: sim,
     python: {python}, transport: local}
"""


def _health(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "npu_hil.harness.cli.main", "health", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env, "COLUMNS": "200"},
    )


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    (tmp_path / "inventory.yaml").write_text(INVENTORY.replace("{python}", sys.executable))
    return tmp_path


def test_a_bad_board_is_listed_with_its_cause_until_cleared(
    lab: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"NPU_HIL_HEALTH_DIR": str(lab / "health")}
    monkeypatch.setenv("NPU_HIL_HEALTH_DIR", env["NPU_HIL_HEALTH_DIR"])  # where the farm writes
    with Farm(
        lab / "inventory.yaml", workdir=lab / "farm", retry=NO_RETRY, breaker_threshold=1
    ) as farm:
        farm.ready("left-01")
        with pytest.raises((BoardBrokenError, AgentKilledError)):
            run_model(
                farm.session("left-01"),
                "identity",
                X,
                faults=[{"name": "crash", "signal": "SIGKILL"}],
            )

    listed = _health(lab, env)
    assert listed.returncode == 1, listed.stdout + listed.stderr
    row = next(line for line in listed.stdout.splitlines() if "left-01" in line)
    assert "bad" in row and "circuit breaker" in listed.stdout
    assert "unknown" in next(line for line in listed.stdout.splitlines() if "right-01" in line)

    as_json = json.loads(_health(lab, env, "--json", "--board", "left-01").stdout)
    assert list(as_json) == ["left-01"]
    assert as_json["left-01"]["state"] == "bad" and "SIGKILL" in as_json["left-01"]["cause"]

    cleared = _health(lab, env, "--clear", "left-01", "--json")
    assert cleared.returncode == 0, cleared.stdout + cleared.stderr
    after = json.loads(cleared.stdout)["left-01"]
    assert after["state"] == "unknown" and after["history"][-1]["what"] == "cleared by hand"
    assert after["cause"] == "npu-hil health --clear"


def test_a_board_the_inventory_lacks_is_exit_2(lab: Path) -> None:
    env = {"NPU_HIL_HEALTH_DIR": str(lab / "health")}
    for args in (["--board", "nope-01"], ["--clear", "nope-01"]):
        proc = _health(lab, env, *args)
        assert proc.returncode == 2
        assert "no board 'nope-01' in inventory.yaml (its boards: left-01, right-01)" in proc.stderr
    assert not (lab / "health").exists()  # nothing written for a refused command


def test_a_cause_with_brackets_is_shown_as_written(lab: Path) -> None:
    from npu_hil.harness.farm.health_store import BAD, HealthStore

    HealthStore(lab / "health").record(
        "right-01", BAD, "health check failed", cause="[bold]rknn_init[/bold] returned -1"
    )
    proc = _health(lab, {"NPU_HIL_HEALTH_DIR": str(lab / "health")}, "--board", "right-01")
    assert proc.returncode == 1
    assert "[bold]rknn_init[/bold] returned -1" in proc.stdout


def test_a_terminal_escape_in_a_cause_is_shown_never_run(lab: Path) -> None:
    """A board's kernel log line or a damaged health file may hold ESC sequences (a clear
    screen, a colour, a title change): the console shows them as text."""
    from npu_hil.harness.farm.health_store import BAD, HealthStore

    HealthStore(lab / "health").record(
        "right-01", BAD, "health check failed", cause="npu hung\x1b[2J\x1b]0;owned\x07 here"
    )
    proc = _health(lab, {"NPU_HIL_HEALTH_DIR": str(lab / "health")}, "--board", "right-01")
    assert proc.returncode == 1
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "npu hung\\x1b[2J\\x1b]0;owned\\x07 here" in proc.stdout
