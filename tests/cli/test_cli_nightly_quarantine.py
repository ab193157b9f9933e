"""``npu-hil nightly`` with a quarantine list: a listed test's failure leaves the run green and
the closing table shows a ``quarantined`` column beside the four outcomes (only then)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

SUITE = """
import numpy as np
import pytest
from npu_hil.harness.plugin import assert_run_ok

X = {"input": np.zeros((1, 3, 2, 2), dtype=np.uint8)}

@pytest.mark.soc("rk3588")
def test_known_bad(run_model):
    assert_run_ok(run_model("identity", X, faults=["garbage"]))

@pytest.mark.soc("rk3588")
def test_good(run_model):
    assert_run_ok(run_model("identity", X))
"""


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


def test_a_listed_failure_gets_a_column_of_its_own(tmp_path: Path) -> None:
    suite = tmp_path / "tests" / "hil"
    suite.mkdir(parents=True)
    (suite / "test_suite.py").write_text(SUITE)
    expires = (datetime.now(timezone.utc).date() + timedelta(days=30)).isoformat()
    (tmp_path / "q.yml").write_text(
        f"quarantine:\n  - {{test: '*::test_known_bad', reason: wrong rows, expires: {expires}}}\n"
    )
    plain = _nightly(tmp_path, "--target", "rk3588")
    assert plain.returncode == 1, plain.stdout + plain.stderr
    header = next(line for line in plain.stdout.splitlines() if "passed" in line)
    assert "quarantined" not in header
    listed = _nightly(tmp_path, "--target", "rk3588", "--", "--quarantine", str(tmp_path / "q.yml"))
    assert listed.returncode == 0, listed.stdout + listed.stderr
    header = next(line for line in listed.stdout.splitlines() if "passed" in line)
    assert header.rstrip(" ┃|").endswith("quarantined")
    total = next(line for line in listed.stdout.splitlines() if "total" in line)
    cells = [c.strip() for c in total.replace("│", "|").split("|") if c.strip()]
    assert cells[-5:] == ["1", "0", "0", "0", "1"]  # passed, failed, error, skipped, quarantined
