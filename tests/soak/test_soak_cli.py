"""``npu-hil soak`` end to end in a subprocess on the built-in simulated farm: exit 0 and the
report on a clean soak, exit 1 with the failed bound named on a leak, ``--json``, and exit 2
with one line for each kind of bad input, before anything runs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
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


@pytest.mark.parametrize(
    "args",
    [
        ["--seconds", "inf"],
        ["--seconds", "nan"],
        ["--seconds", "1e400"],
        ["--hours", "10000"],
        ["--contexts", "100000", "--seconds", "1"],
        ["--iterations", "1" + "0" * 30],
        ["--seconds", "1", "--shape", "100000,100000,100"],
        ["--seconds", "1", "--shape", "0,3,8,8"],
    ],
    ids=["inf", "nan", "1e400", "hours", "contexts", "iterations", "huge-shape", "zero-dim"],
)
def test_absurd_numbers_are_refused_in_one_line(tmp_path: Path, args: list[str]) -> None:
    done = _soak(tmp_path, "--board", BOARD, *args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr and "expected" in lines[-1]
    assert not (tmp_path / "reports").exists()  # nothing ran


def test_sigint_stops_a_soak_and_its_report_says_what_ran(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "npu_hil.harness.cli.main", "soak", "--board", BOARD]
    cmd += ["--seconds", "600", "--reports", str(tmp_path / "reports")]
    cmd += ["--workdir", str(tmp_path / "work"), "--json"]
    # Started as a background job of a script is: with SIGINT ignored.
    proc = subprocess.Popen(
        cmd,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    deadline = time.monotonic() + 60
    while not list((tmp_path / "work").rglob("*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(3)  # some jobs
    proc.send_signal(signal.SIGINT)
    stopped = time.monotonic()
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - stopped < 20, err
    assert proc.returncode == 1, err  # judged, and an interrupted soak does not pass
    outcome = json.loads(out)
    assert "interrupted before the end of the plan" in outcome["reasons"]
    assert Path(outcome["report"]).is_dir() and outcome["elapsed_s"] < 120
