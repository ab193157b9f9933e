"""``npu-hil soak`` end to end in a subprocess on the built-in simulated farm: exit 0 and the
report on a clean soak, exit 1 with the failed bound named on a leak, ``--json``, and exit 2
with one line for each kind of bad input, before anything runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

BOARD = "rk3566-01"


def _soak(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "npu_hil.harness.cli.main",
            "soak",
            "--workdir",
            str(cwd / "work"),
            "--reports",
            str(cwd / "reports"),
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_clean_soak_exits_0_with_its_report(tmp_path: Path) -> None:
    done = _soak(
        tmp_path,
        "--board",
        BOARD,
        "--iterations",
        "30",
        "--sample-every",
        "0.02",
        "--model",
        "conv1x1",
        "--model",
        "depthwise",
        "--json",
    )
    assert done.returncode == 0, done.stderr + done.stdout
    outcome = json.loads(done.stdout)
    assert outcome["passed"] and outcome["reasons"] == []
    assert outcome["error_rates"][BOARD] == {"jobs": 60, "errors": 0, "rate": 0.0, "by_kind": {}}
    folder = Path(outcome["report"])
    assert folder.parent == tmp_path / "reports"
    document = json.loads((folder / "soak.json").read_text(encoding="utf-8"))
    assert document["plan"]["models"] == ["conv1x1", "depthwise"]
    assert document["plan"]["contexts"] == 2
    assert [c["jobs"] for c in document["boards"][0]["contexts"]] == [30, 30]
    assert "data:image/png;base64," in (folder / "soak.html").read_text(encoding="utf-8")


def test_a_leak_exits_1_naming_the_bound(tmp_path: Path) -> None:
    # Enough jobs for the samples a slope needs, however fast a job is.
    done = _soak(
        tmp_path,
        "--target",
        "rk3566",
        "--iterations",
        "120",
        "--sample-every",
        "0.02",
        "--contexts",
        "1",
        "--sim-fault",
        f"{BOARD}=leak:kib=128",
    )
    assert done.returncode == 1, done.stderr + done.stdout
    assert "npu-hil soak FAILED" in done.stdout
    assert f"FAILED: {BOARD} context 0 agent rss_kib: leak slope " in done.stdout
    assert "KiB per 1000 jobs" in done.stdout and "> 4096" in done.stdout
    assert "report: " in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--iterations", "3"], "choose the boards to soak with --board NAME or --target SOC"),
        (["--board", "nope-01", "--iterations", "3"], "--board 'nope-01': no such board in"),
        (["--target", "rk9999", "--iterations", "3"], "--target 'rk9999': no such target"),
        (["--board", BOARD], "one of the arguments --hours --minutes --seconds --iterations"),
        (["--board", BOARD, "--hours", "1", "--iterations", "3"], "not allowed with argument"),
        (["--board", BOARD, "--iterations", "0"], "--iterations: expected more than 0"),
        (["--board", BOARD, "--minutes", "x"], "--minutes: expected a number, got 'x'"),
        (
            ["--board", BOARD, "--iterations", "3", "--max-error-rate", "2"],
            "max_error_rate must be in [0, 1], got 2.0",
        ),
        (
            ["--board", BOARD, "--iterations", "3", "--max-leak-kib-per-hour", "-1"],
            "max_leak_kib_per_hour must be a number >= 0",
        ),
        (
            ["--board", BOARD, "--iterations", "3", "--sim-fault", f"{BOARD}=leak:kib=0"],
            "kib must be an integer in [1, 65536]",
        ),
        (
            ["--board", BOARD, "--iterations", "3", "--sim-fault", "ghost-01=leak"],
            "--sim-fault ghost-01=leak: no such board",
        ),
        (["--board", BOARD, "--iterations", "3", "--model", "resnet"], "invalid choice: 'resnet'"),
        (["--board", BOARD, "--iterations", "3", "--shape", "1,a"], "--shape: expected integers"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    done = _soak(tmp_path, *args)
    assert done.returncode == 2, done.stderr + done.stdout
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2  # argparse's usage line, then the error
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "reports").exists()
