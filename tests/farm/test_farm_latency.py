"""run_model from a script with runs and warm-up: the figures come back in the ModelRun, from a
simulated board behind the real agent, labelled as modeled."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.farm import Farm
from npu_hil.harness.pipeline import run_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sim_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    with Farm(ROOT / "inventory.yaml", workdir=tmp_path_factory.mktemp("farm")) as farm:
        yield farm


@pytest.mark.slow
def test_run_model_times_five_runs(sim_farm: Farm) -> None:
    (chosen,) = sim_farm.boards(targets=["rk3588"])
    session = sim_farm.session(chosen)
    x = np.arange(60, dtype=np.uint8).reshape(1, 3, 4, 5)
    run = run_model(session, "identity", {"input": x}, runs=5, warmup=1)
    assert run.ok, run.summary()
    lat = run.latency
    assert lat is not None and (lat.runs, lat.warmup) == (5, 1)
    assert 0 < lat.min_ms <= lat.p50_ms <= lat.p99_ms <= lat.max_ms
    assert lat.jitter_ms == lat.p99_ms - lat.p50_ms
    # A simulated board's figures are its target's model, and say so; it reads no board
    # state (the host's clocks and zones are not the board's).
    assert lat.source == "modeled"
    assert "latency: 5 runs (1 warm-up, modeled)" in run.summary()
    assert not run.board_state
    once = run_model(session, "identity", {"input": x})
    assert once.latency is not None and once.latency.runs == 1
