"""SIGTERM stops a run the way Ctrl-C does: the boards' sessions close (no scratch folder of
theirs is left) and the report is written, marked as not complete; with and without xdist."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

TESTS = """
import time

import numpy as np
import pytest
from npu_hil.harness.plugin import assert_run_ok

X = {"input": np.random.default_rng(0).integers(0, 255, (1, 3, 6, 7)).astype(np.uint8)}

@pytest.mark.vendor("rockchip", "kneron")
@pytest.mark.parametrize("n", range(200))
def test_case(run_model, n):
    assert_run_ok(run_model("conv3x3", X))
    time.sleep(0.05)
"""


def _records(reports: Path) -> int:
    return sum(len(found.read_text().splitlines()) for found in reports.glob("*/records.jsonl"))


@pytest.mark.parametrize("workers", [[], ["-n", "2", "--dist", "loadgroup"]], ids=["n0", "n2"])
def test_sigterm_writes_the_report_and_leaves_no_scratch(
    project: pytest.Pytester, workers: list[str]
) -> None:
    if workers:
        pytest.importorskip("xdist")
    project.makepyfile(TESTS)
    scratch = project.path / "tmp"
    scratch.mkdir(mode=0o700)
    env = {**os.environ, "TMPDIR": str(scratch), "XDG_CACHE_HOME": str(project.path / "cache")}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers]
    proc = subprocess.Popen(
        cmd, cwd=project.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    reports = project.path / "reports"
    deadline = time.monotonic() + 120
    while _records(reports) < 6 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()[0].decode()[-2000:]
    proc.send_signal(signal.SIGTERM)
    output = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output[-2000:]
    assert "stopped by SIGTERM" in output
    (summary_path,) = reports.glob("*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["meta"]["complete"] is False
    assert summary["meta"]["pytest_exit"] == pytest.ExitCode.INTERRUPTED
    assert 6 <= summary["total"] < 600
    assert (summary_path.parent / "report.html").is_file()
    # Framed jobs make no scratch folder at all, so even a worker xdist kills at shutdown with
    # its sessions open leaves none (before: one per board session, 84 at 200 boards).
    assert not list(scratch.glob("npu-hil-*")), sorted(p.name for p in scratch.iterdir())


def test_a_handler_of_the_embedding_program_is_kept() -> None:
    code = (
        "import signal\n"
        "from npu_hil.harness.plugin.interrupt import sigterm_interrupts\n"
        "mine = lambda *a: None\n"
        "signal.signal(signal.SIGTERM, mine)\n"
        "assert sigterm_interrupts() is False and signal.getsignal(signal.SIGTERM) is mine\n"
        "signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
        "assert sigterm_interrupts() is True\n"
        "import os\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    import time; time.sleep(5)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
        "assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # a second one ends it\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "interrupted", done.stderr
