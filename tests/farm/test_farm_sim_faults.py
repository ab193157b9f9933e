"""The performance and accuracy faults through the real path: run_model on the default simulated
farm, the fault given per board (``Farm(sim_faults=...)``, what ``--sim-fault`` sets), the agent
in between. Each fault moves the figure it is about and nothing else."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.farm import Farm
from npu_hil.harness.pipeline import run_model
from npu_hil.harness.pipeline.result import ModelRun

ROOT = Path(__file__).resolve().parents[2]
BOARD = "rk3588-01"
IMAGE = np.random.default_rng(5).integers(0, 256, (1, 3, 8, 8)).astype(np.uint8)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("farm")


def _run(workdir: Path, faults: list[dict[str, Any]] | None, model: str, runs: int) -> ModelRun:
    sim_faults = {BOARD: faults} if faults else None
    with Farm(ROOT / "inventory.yaml", workdir=workdir, sim_faults=sim_faults) as farm:
        session = farm.session(BOARD)
        assert session.adapter_options.get("faults") == faults  # every job carries them
        return run_model(session, model, {"input": IMAGE}, runs=runs, tolerance=1.0)


@pytest.fixture(scope="module")
def clean(workdir: Path) -> Iterator[ModelRun]:
    yield _run(workdir, None, "conv3x3", 20)


def _worst_snr(run: ModelRun) -> float:
    values = [o.accuracy.snr_db for o in run.outputs if o.accuracy is not None]
    assert values
    return min(math.inf if v == "inf" else float(v) for v in values)


@pytest.mark.slow
def test_a_clean_board_reports_its_modeled_time(clean: ModelRun) -> None:
    lat = clean.latency
    assert clean.ok, clean.summary()
    assert lat is not None and lat.source == "modeled" and lat.runs == 20
    # the modeled time spreads by at most 2 %: well inside any baseline's 10 % floor
    assert (lat.max_ms - lat.min_ms) <= 0.04 * lat.p50_ms


@pytest.mark.slow
def test_slow_raises_the_median_by_its_percent(workdir: Path, clean: ModelRun) -> None:
    slow = _run(workdir, [{"name": "slow", "percent": 20}], "conv3x3", 20)
    assert slow.ok, slow.summary()  # the buffers are the clean run's
    assert slow.latency is not None and clean.latency is not None
    ratio = slow.latency.p50_ms / clean.latency.p50_ms
    assert abs(ratio - 1.20) <= 0.03 * 1.20, ratio
    assert _worst_snr(slow) == _worst_snr(clean)


@pytest.mark.slow
def test_noisy_latency_spreads_the_runs_around_the_same_median(
    workdir: Path, clean: ModelRun
) -> None:
    noisy = _run(workdir, [{"name": "noisy-latency", "percent": 50, "seed": 3}], "conv3x3", 20)
    assert noisy.ok, noisy.summary()
    assert noisy.latency is not None and clean.latency is not None
    assert noisy.latency.jitter_ms > 5 * clean.latency.jitter_ms
    assert noisy.latency.max_ms - noisy.latency.min_ms > 0.3 * clean.latency.p50_ms
    assert abs(noisy.latency.p50_ms / clean.latency.p50_ms - 1) < 0.25


@pytest.mark.slow
def test_accuracy_drift_passes_the_byte_diff_and_lowers_the_snr(
    workdir: Path, clean: ModelRun
) -> None:
    drift = _run(workdir, [{"name": "accuracy-drift", "lsb": 1, "fraction": 0.1}], "conv3x3", 1)
    assert drift.ok, drift.summary()  # within the diff's tolerance of one unit
    moved = [o for o in drift.outputs if o.diff.within_tolerance]
    assert moved, "the drift moved no element"
    assert _worst_snr(drift) < _worst_snr(clean) - 1.0, (_worst_snr(drift), _worst_snr(clean))


@pytest.mark.slow
def test_accuracy_drift_makes_an_exact_identity_inexact(workdir: Path) -> None:
    exact = _run(workdir, None, "identity", 1)
    assert _worst_snr(exact) == math.inf
    drift = _run(workdir, [{"name": "accuracy-drift"}], "identity", 1)
    assert drift.ok, drift.summary()
    assert math.isfinite(_worst_snr(drift))


@pytest.mark.slow
def test_a_board_fault_and_a_test_fault_both_apply(workdir: Path) -> None:
    with Farm(
        ROOT / "inventory.yaml", workdir=workdir, sim_faults={BOARD: [{"name": "slow"}]}
    ) as farm:
        run = run_model(farm.session(BOARD), "conv3x3", {"input": IMAGE}, faults=["byte-swap"])
    assert not run.ok  # the test's own fault is still caught


def test_a_fault_for_a_board_the_inventory_lacks_is_refused(workdir: Path) -> None:
    with pytest.raises(NpuHilError, match="no board nosuch-01 in"):
        Farm(ROOT / "inventory.yaml", workdir=workdir, sim_faults={"nosuch-01": [{"name": "slow"}]})
