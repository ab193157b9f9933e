"""A farm's live agents are bounded: beyond ``max_agents`` the least recently used board's agent
ends, and starts again with that board's next job; the jobs give the same answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.farm import Farm
from npu_hil.harness.farm.starter import builtin_inventory
from npu_hil.harness.pipeline import run_model


def live_agents(farm: Farm) -> list[str]:
    """The boards whose agent is running, least recently used first."""
    return [name for name, s in farm._sessions.items() if s.client.running]


X = {"input": np.random.default_rng(0).integers(0, 255, (1, 3, 4, 5)).astype(np.uint8)}


@pytest.mark.slow
def test_at_most_max_agents_live_and_an_ended_one_starts_again(tmp_path: Path) -> None:
    boards = ["rk3588-01", "rk3566-01", "rv1106-01", "rk3562-01", "rk3576-01"]
    with Farm(builtin_inventory(), workdir=tmp_path, max_agents=2) as farm:
        first = {}
        for name in boards:
            session = farm.session(name)
            first[name] = run_model(session, "conv1x1", X)
            assert len(live_agents(farm)) <= 2, live_agents(farm)
        assert live_agents(farm) == ["rk3562-01", "rk3576-01"]
        ended = farm.session("rk3588-01")  # least recently used: its agent ended
        assert not ended.client.running and ended.client.agents_started == 1
        again = run_model(ended, "conv1x1", X)
        assert ended.client.agents_started == 2  # started again for this job
        assert again.ok and [t.data.tobytes() for t in again.outputs] == [
            t.data.tobytes() for t in first["rk3588-01"].outputs
        ]
        assert live_agents(farm) == ["rk3576-01", "rk3588-01"]


def test_max_agents_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(NpuHilError, match="max_agents must be 1 or more, got 0"):
        Farm(builtin_inventory(), workdir=tmp_path, max_agents=0)


def test_a_farm_closes_its_sessions_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each close may wait for its agent to exit; one after another, many boards would outlast
    pytest-xdist's exit timeout."""
    import threading
    import time

    from npu_hil.harness.farm.session import BoardSession

    threads: set[str] = set()

    def slow_close(self: BoardSession) -> None:
        threads.add(threading.current_thread().name)
        time.sleep(0.4)

    farm = Farm(builtin_inventory(), workdir=tmp_path)
    for board in farm.boards()[:8]:
        farm.session(board)
    monkeypatch.setattr(BoardSession, "close", slow_close)
    started = time.perf_counter()
    farm.close()
    elapsed = time.perf_counter() - started
    assert len(threads) == 8 and elapsed < 8 * 0.4 / 2, (threads, elapsed)
    assert live_agents(farm) == []
