"""The plugin's regression suite (npu_hil/harness/suite) over real links: ``--simfarm`` puts
simulated boards behind a real OpenSSH sshd and serial consoles on 127.0.0.1, and every case must
pass there as it does on the local simulated boards, with each record saying which link carried it.

These runs are subprocesses of their own (``-n 2``), as a user would start them; the farm they
start must be gone when they end, pass or fail.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from simfarm_checks import leftovers, require_link

from npu_hil.harness.codec import known_targets
from npu_hil.harness.report.runs import RUN_ID_PATTERN

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "npu_hil" / "harness" / "suite"


def run_suite(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    reports = tmp_path / "reports"
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(SUITE),
            "-p",
            "no:cacheprovider",
            "-q",
            "--reports",
            str(reports),
            *args,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    found = reports.iterdir() if reports.exists() else iter(())
    runs = [p for p in found if RUN_ID_PATTERN.match(p.name)]
    records = []
    if len(runs) == 1 and (runs[0] / "records.jsonl").exists():
        lines = (runs[0] / "records.jsonl").read_text().splitlines()
        records = [json.loads(line) for line in lines]
    assert not leftovers(tmp), leftovers(tmp)
    assert not [p for p in tmp.iterdir() if p.name.startswith("npu-hil-simfarm-")]
    return done, records


@functools.cache
def local_case_count() -> int:
    """How many cases the suite has on the local simulated boards (collected once a run)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(SUITE),
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "--backend",
            "sim",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return sum(1 for line in done.stdout.splitlines() if "::" in line)


@pytest.mark.parametrize("kind", ["ssh", "serial"])
def test_the_whole_regression_suite_runs_over_the_link(kind: str, tmp_path: Path) -> None:
    require_link(kind)
    done, records = run_suite(tmp_path, "--simfarm", kind, "-n", "2")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    expected = local_case_count()
    assert expected > 900 and len(records) == expected
    assert {r["outcome"] for r in records} == {"passed"}
    assert {r["properties"]["transport"] for r in records} == {kind}
    # Simulated runtimes behind a real link are still simulated results, never hardware ones.
    assert all(r["simulated"] for r in records)
    assert all(f"-{kind}-" in r["board"] for r in records)
    assert {r["target"] for r in records} == set(known_targets())
