"""``npu-hil simfarm``: the processes outlive the command that started them, exit codes, and
one-line errors for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from npu_hil.harness.cli.main import main
from npu_hil.harness.farm.inventory import load_inventory
from npu_hil_testkit.simfarm import harness_root
from tests.simfarm.conftest import gone

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e


def npu_hil(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line in a process of its own, as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(harness_root())}
    return subprocess.run(
        [sys.executable, "-m", "npu_hil.harness.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=harness_root(),
        timeout=120,  # a farm that kept our pipes open would hang here
    )


def test_up_status_down_from_the_command_line(tmp_path: Path) -> None:
    folder = tmp_path / "farm"
    started = npu_hil(
        "simfarm",
        "up",
        "--dir",
        str(folder),
        "--targets",
        "rk3562",
        "--transports",
        "ssh,serial",
        "--json",
    )
    if started.returncode == 2 and "not installed" in started.stderr:
        pytest.skip(started.stderr.strip())
    assert started.returncode == 0, started.stderr
    report = json.loads(started.stdout)
    assert report["inventory"] == str(folder / "inventory.yaml")
    assert [b["name"] for b in report["boards"]] == ["rk3562-ssh-01", "rk3562-serial-01"]
    pids = [p["pid"] for p in report["processes"]]
    assert report["ports"]["sshd"] == report["processes"][0]["port"]
    try:
        # The command has exited; its farm has not.
        assert not any(gone(pid) for pid in pids)
        assert [b.name for b in load_inventory(report["inventory"]).boards] == [
            "rk3562-ssh-01",
            "rk3562-serial-01",
        ]
        again = npu_hil("simfarm", "up", "--dir", str(folder), "--targets", "rk3562")
        assert again.returncode == 2
        assert len(again.stderr.strip().splitlines()) == 1 and "already up" in again.stderr

        alive = npu_hil("simfarm", "status", "--dir", str(folder), "--json")
        assert alive.returncode == 0, alive.stdout + alive.stderr
        assert [p["state"] for p in json.loads(alive.stdout)["processes"]] == ["running"] * 2
    finally:
        stopped = npu_hil("simfarm", "down", "--dir", str(folder))
    assert stopped.returncode == 0, stopped.stderr
    assert "sshd" in stopped.stdout and "terminated" in stopped.stdout
    assert all(gone(pid) for pid in pids)

    idle = npu_hil("simfarm", "status", "--dir", str(folder))
    assert (idle.returncode, idle.stdout) == (1, "nothing running\n")
    twice = npu_hil("simfarm", "down", "--dir", str(folder))
    assert (twice.returncode, twice.stdout) == (0, "nothing running\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--boards", "0"], "--boards: expected an integer from 1 to 64, got '0'"),
        (["--boards", "two"], "--boards: expected an integer from 1 to 64"),
        (["--boards", "65"], "--boards: expected an integer from 1 to 64, got '65'"),
        (["--boards", "100000000000000000000"], "--boards: expected an integer from 1 to 64"),
        (["--targets", "rk9999"], "unknown target 'rk9999'"),
        (["--targets", ","], "--targets: expected a comma-separated list"),
        (["--transports", "ssh,usb"], "unknown transport 'usb'"),
        (["--serial", "tcp"], "--serial: invalid choice"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "farm"
    assert exit_code(["simfarm", "up", "--dir", str(folder), *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert message in err
    assert not folder.exists(), "bad input must not start anything"


def exit_code(argv: list[str]) -> int:
    """``main``'s exit code, whether argparse exits (usage errors) or main returns it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
