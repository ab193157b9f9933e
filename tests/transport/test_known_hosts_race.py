"""``accept-new`` from several processes at once records a new board's key once (a real sshd)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.transport.conftest import Sshd

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 8

# Each process waits for the same instant, then connects: all of them find the key missing.
CONNECT = """
import sys, time
from npu_hil.harness.transport.ssh import SshTransport
port, key, known, start = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
transport = SshTransport("127.0.0.1", port, sys.argv[5], key_file=key, known_hosts=known,
                         user_known_hosts=None, host_key_policy="accept-new",
                         workdir=sys.argv[6], connect_timeout=20.0)
time.sleep(max(0.0, start - time.time()))
transport.exists("x")
transport.close()
"""


def test_concurrent_accept_new_records_the_key_once(sshd: Sshd, tmp_path: Path) -> None:
    known = tmp_path / "own" / "known_hosts"
    start = time.time() + 3.0  # after every interpreter has imported paramiko
    args = [str(sshd.port), str(sshd.client_key), str(known), str(start), sshd.user]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONNECT, *args, str(tmp_path / f"board{i}")],
            cwd=ROOT,
            stderr=subprocess.PIPE,
        )
        for i in range(PROCESSES)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode(errors="replace")
    lines = [line for line in known.read_text().splitlines() if line.strip()]
    assert lines == [f"[127.0.0.1]:{sshd.port} {sshd.host_pub}"]
