"""The per-board circuit breaker: a board whose infrastructure fails N times in a row is marked
unhealthy and its later runs error at once with the cause; the other boards go on. Driven by a
real agent that really dies (the simulated runtime's ``crash`` fault, SIGKILL)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.errors import AgentKilledError, TransportError
from npu_hil.harness.farm import NO_RETRY, BoardBrokenError, Farm, parse_inventory
from npu_hil.harness.pipeline import run_model

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

INVENTORY = """\
boards:
  - {name: bad-01, target: rk3588, backend: sim, transport: local}
  - {name: good-01, target: rk3588, backend: sim, transport: local}
"""
X = {"input": np.zeros((1, 3, 2, 2), dtype=np.uint8)}
KILLED = [{"name": "crash", "signal": "SIGKILL"}]


def farm(tmp_path: Path, **options: object) -> Farm:
    source = tmp_path / "inventory.yaml"
    source.write_text(INVENTORY)
    inventory = parse_inventory(INVENTORY, source=str(source))
    # No retries: each run_model here is one attempt, so the failures in a row are counted.
    options.setdefault("retry", NO_RETRY)
    return Farm(inventory, workdir=tmp_path / "farm", **options)  # type: ignore[arg-type]


def test_three_infrastructure_failures_in_a_row_mark_the_board_unhealthy(tmp_path: Path) -> None:
    with farm(tmp_path) as lab:
        bad, good = lab.session("bad-01"), lab.session("good-01")
        for _ in range(2):
            with pytest.raises(AgentKilledError, match="killed by SIGKILL"):
                run_model(bad, "identity", X, faults=KILLED)
        # The third opens the breaker: the error says so, with the failure behind it.
        with pytest.raises(BoardBrokenError, match="failed 3 times in a row") as opened:
            run_model(bad, "identity", X, faults=KILLED)
        assert isinstance(opened.value.__cause__, AgentKilledError)
        assert "killed by SIGKILL" in opened.value.message
        assert isinstance(opened.value, TransportError)  # infrastructure: an error outcome
        # Every later run on it errors at once: no agent started, no job sent.
        started = lab.session("bad-01").client.agents_started
        clock = time.monotonic()
        with pytest.raises(BoardBrokenError, match="SIGKILL"):
            run_model(bad, "identity", X)  # even a clean job
        assert time.monotonic() - clock < 0.5
        assert bad.client.agents_started == started
        assert not lab.health("bad-01").ok
        assert "circuit breaker" in (lab.health("bad-01").error or "")
        # The other board is unaffected.
        assert run_model(good, "identity", X).ok
        assert not lab.breaker("good-01").is_open
        # A power cycle (a simulated board: its agent restarted) gives the board a fresh start.
        lab.power_cycle("bad-01")
        assert run_model(bad, "identity", X).ok


def test_a_board_that_answers_in_between_is_not_marked(tmp_path: Path) -> None:
    with farm(tmp_path, breaker_threshold=2) as lab:
        bad = lab.session("bad-01")
        for _ in range(3):
            with pytest.raises(AgentKilledError):
                run_model(bad, "identity", X, faults=KILLED)
            assert run_model(bad, "identity", X).ok  # the run of failures ends here
        assert not lab.breaker("bad-01").is_open


def test_the_threshold_is_configurable_and_zero_never_opens(tmp_path: Path) -> None:
    with (
        farm(tmp_path, breaker_threshold=1) as lab,
        pytest.raises(BoardBrokenError, match="threshold 1"),
    ):
        run_model(lab.session("bad-01"), "identity", X, faults=KILLED)
    with farm(tmp_path, breaker_threshold=0) as lab:
        for _ in range(4):
            with pytest.raises(AgentKilledError):
                run_model(lab.session("bad-01"), "identity", X, faults=KILLED)
