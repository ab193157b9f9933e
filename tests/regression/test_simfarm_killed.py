"""A ``--simfarm`` run killed with SIGKILL cannot stop its farm (an sshd with root login by key
on 127.0.0.1, when run as root, and its folder of keys); the next ``--simfarm`` run stops and
removes it, and leaves alone what is not its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from simfarm_checks import require_link

from npu_hil_testkit.simfarm import down
from npu_hil_testkit.simfarm.ledger import SimFarmLedger

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

HANGS = """
import time
import pytest

@pytest.mark.soc("rk3588")
def test_hangs(board):
    open("started", "w").close()
    time.sleep(600)
"""

QUICK = """
import pytest

@pytest.mark.soc("rk3588")
def test_quick(board):
    assert board.transport_kind == "ssh"
"""


def _naming(folder: Path) -> list[str]:
    """The processes whose command line names ``folder`` (a farm's sshd names its config)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if proc.name.isdigit() and str(folder) in cmdline:
            found.append(f"{proc.name}: {cmdline.strip()}")
    return found


def _pytest(project: Path, env: dict[str, str], test: str) -> subprocess.Popen[bytes]:
    (project / "test_it.py").write_text(test)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "--simfarm",
            "ssh",
            "--target",
            "rk3588",
            "-p",
            "no:cacheprovider",
            "-q",
            "test_it.py",
        ],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def test_a_killed_run_is_cleaned_up_by_the_next(tmp_path: Path) -> None:
    require_link("ssh")
    tmp, state, project = tmp_path / "tmp", tmp_path / "state", tmp_path / "project"
    for folder in (tmp, state, project):
        folder.mkdir(mode=0o700)
    env = {**os.environ, "TMPDIR": str(tmp), "XDG_RUNTIME_DIR": str(state)}
    env.pop("PYTEST_XDIST_WORKER", None)

    first = _pytest(project, env, HANGS)
    deadline = time.monotonic() + 120
    while not (project / "started").exists():
        assert first.poll() is None, first.communicate()[0].decode(errors="replace")
        assert time.monotonic() < deadline, "the first run never reached its board"
        time.sleep(0.2)
    first.kill()  # SIGKILL: no cleanup runs
    first.wait()
    assert first.returncode == -signal.SIGKILL
    farms = [p for p in tmp.iterdir() if p.name.startswith("npu-hil-simfarm-")]
    assert len(farms) == 1
    stale = _naming(farms[0])
    assert any("sshd" in line for line in stale), stale  # the killed run's sshd runs on

    ledger = SimFarmLedger(state / "npu-hil")
    try:
        second = _pytest(project, env, QUICK)
        out = second.communicate(timeout=300)[0].decode(errors="replace")
        assert second.returncode == 0, out
        assert not _naming(farms[0]), _naming(farms[0])
        assert not farms[0].exists()
        assert not [p for p in tmp.iterdir() if p.name.startswith("npu-hil-simfarm-")]
        assert ledger._load() == []
    finally:
        if farms[0].exists():  # the code under test failed: do not leave its sshd running
            down(farms[0])


def test_a_live_run_and_a_foreign_folder_are_left_alone(tmp_path: Path) -> None:
    ledger = SimFarmLedger(tmp_path)
    mine = tmp_path / "npu-hil-simfarm-live"
    mine.mkdir()
    ledger.add(mine)  # this process: alive
    odd = tmp_path / "not-a-farm"
    odd.mkdir()
    link = tmp_path / "npu-hil-simfarm-link"
    link.symlink_to(odd)
    with ledger._runs() as runs:  # dead holders whose folders are not farm folders of ours
        runs.append({"folder": str(odd), "pid": 999999999, "start": 1, "host": ledger.host})
        runs.append({"folder": str(link), "pid": 999999998, "start": 1, "host": ledger.host})
    assert ledger.reap() == []
    assert mine.is_dir() and odd.is_dir() and link.is_symlink()
    assert [r["folder"] for r in ledger._load()] == [str(mine)]
    ledger.remove(mine)
    assert ledger._load() == []
