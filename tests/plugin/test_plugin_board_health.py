"""In pytest: a board whose circuit breaker opened is kept bad for the next run, which errors its
tests at once with the cause and since when; ``--clear-health`` lets it back in; every run's
``summary.json`` carries the board's kept history. The board is reached through its transport
(a local link running the real agent with the simulated runtime), as hardware is."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

BOARD_PYTHON = """\
#!/bin/sh
PYTHONPATH="{root}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{python}" "$@"
"""

INVENTORY = """\
boards:
  - {{name: hw-01, target: rk3588, backend: hw, fallback: none, adapter: sim,
      python: {python}, transport: local}}
"""

TESTS = """
import os
import numpy as np
import pytest

X = {"input": np.zeros((1, 3, 2, 2), dtype=np.uint8)}

@pytest.mark.soc("rk3588")
def test_case(board, run_model):
    crash = [{"name": "crash", "signal": "SIGKILL"}] if os.environ.get("CRASH") else None
    assert run_model("identity", X, faults=crash).ok
"""


def _summary(project: pytest.Pytester) -> dict[str, object]:
    runs = sorted(
        (p for p in (project.path / "reports").iterdir() if (p / "summary.json").is_file()),
        key=lambda p: (p / "summary.json").stat().st_mtime,
    )
    return json.loads((runs[-1] / "summary.json").read_text())  # type: ignore[no-any-return]


def test_a_bad_board_is_kept_out_of_the_next_run_until_cleared(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = pytester.path / "board-python"
    python.write_text(BOARD_PYTHON.format(root=ROOT, python=sys.executable))
    python.chmod(0o755)
    pytester.makefile(".yaml", inventory=INVENTORY.format(python=python))
    pytester.makepyfile(TESTS)
    monkeypatch.setenv("CRASH", "1")
    first = pytester.runpytest("--hil-breaker", "1", "--hil-retries", "0")
    first.assert_outcomes(errors=1)
    kept = _summary(pytester)["health_history"]["hw-01"]  # type: ignore[index]
    assert kept["state"] == "bad" and "circuit breaker" in kept["cause"]
    assert [e["what"] for e in kept["history"]] == ["health check passed", "circuit breaker opened"]

    monkeypatch.delenv("CRASH")
    second = pytester.runpytest("-rE")
    second.assert_outcomes(errors=1)
    second.stdout.fnmatch_lines(
        ["*hw-01 is marked bad since *Z: board hw-01 is marked unhealthy*--clear-health hw-01*"]
    )
    run_id = _summary(pytester)["meta"]["run_id"]  # type: ignore[index]
    html = (pytester.path / "reports" / run_id / "report.html").read_text()
    assert "circuit breaker opened" in html

    third = pytester.runpytest("--clear-health", "hw-01")
    third.assert_outcomes(passed=1)
    kept = _summary(pytester)["health_history"]["hw-01"]  # type: ignore[index]
    assert kept["state"] == "good"
    assert [e["what"] for e in kept["history"]][-2:] == ["cleared by hand", "health check passed"]
    assert "golden job passed" in kept["cause"]


def test_clearing_an_unknown_board_is_a_usage_error(pytester: pytest.Pytester) -> None:
    python = pytester.path / "board-python"
    python.write_text(BOARD_PYTHON.format(root=ROOT, python=sys.executable))
    python.chmod(0o755)
    pytester.makefile(".yaml", inventory=INVENTORY.format(python=python))
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("--clear-health", "nope-01")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*--clear-health nope-01: *nope-01*"])
