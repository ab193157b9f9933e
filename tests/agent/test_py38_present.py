"""Where CI names a Python 3.8 (``NPU_HIL_PY38``), it works with numpy, so the agent and adapter
tests that run under it cannot skip unnoticed."""

from __future__ import annotations

import os
import subprocess

import pytest


@pytest.mark.slow
@pytest.mark.skipif("NPU_HIL_PY38" not in os.environ, reason="NPU_HIL_PY38 is not set")
def test_the_named_python_38_runs_numpy() -> None:
    probe = subprocess.run(
        [os.environ["NPU_HIL_PY38"], "-c", "import sys, numpy; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "(3, 8)"
