"""The board's own logs through the real path (run_model on the default simulated farm, the real
agent in its own process): each simulated board keeps a kernel log of its own, the log faults
write what a real board logs, the class of the lines decides the outcome and the retry, and a
clean run brings back an empty kernel delta and no class."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.errors import CompatibilityError, DeviceError, TransportError
from npu_hil.harness.farm import Farm
from npu_hil.harness.farm.session import BoardSession
from npu_hil.harness.pipeline import run_model
from npu_hil.harness.pipeline.boardlog import (
    BoardLogCompatibilityError,
    BoardLogError,
    LogFinding,
)

ROOT = Path(__file__).resolve().parents[2]
SHAPE = (1, 3, 5, 7)


@pytest.fixture
def sim_farm(tmp_path: Path) -> Iterator[Farm]:
    # One farm per test: a farm reads board health from the folder of the test that made it, so
    # a shared one would carry one test's failures (the circuit breaker's count) into the next.
    with Farm(ROOT / "inventory.yaml", workdir=tmp_path / "farm") as farm:
        yield farm


def session(farm: Farm, target: str) -> BoardSession:
    (board,) = farm.boards(targets=[target])
    return farm.session(board)


def image(target: str) -> dict[str, np.ndarray]:
    x = np.random.default_rng(0).integers(0, 100, SHAPE)
    return {"input": x.astype(np.int8 if target == "kl730" else np.uint8)}


@pytest.mark.slow
@pytest.mark.parametrize("target", ["rk3588", "rdk-x5", "kl730"])
def test_a_clean_run_has_an_empty_kernel_delta_and_no_class(sim_farm: Farm, target: str) -> None:
    result = run_model(session(sim_farm, target), "conv3x3", image(target))
    assert result.ok, result.summary()
    log = result.board_log
    assert isinstance(log, LogFinding)
    assert log.log_class == "" and log.matches == ()
    # Read from the board's own kernel log, not this machine's, and nothing was logged.
    assert log.kernel == {"source": "kmsg", "lines": []}
    assert log.runtime["source"] == "stderr" and log.runtime["lines"] == []


def test_the_runtime_logs_at_the_level_the_job_asks(sim_farm: Farm) -> None:
    board = session(sim_farm, "rk3588")
    quiet = run_model(board, "conv3x3", image("rk3588"), runtime_log_level=1)
    assert quiet.board_log is not None and quiet.board_log.runtime["lines"] == []
    loud = run_model(board, "conv3x3", image("rk3588"), runtime_log_level=3)
    assert loud.ok and loud.board_log is not None
    runtime = loud.board_log.runtime
    assert runtime["level"] == 3 and runtime["env"] == "NPU_HIL_SIM_LOG_LEVEL"
    assert any(line.startswith("I sim: run ") for line in runtime["lines"]), runtime
    assert loud.board_log.log_class == ""  # informational lines change nothing


@pytest.mark.slow
def test_an_npu_timeout_is_infrastructure_and_retried(sim_farm: Farm) -> None:
    board = session(sim_farm, "rk3588")
    retried: list[str] = []
    with pytest.raises(BoardLogError) as caught:
        run_model(
            board, "conv3x3", image("rk3588"), faults=["npu-timeout"], on_retry=retried.append
        )
    error = caught.value
    assert isinstance(error, TransportError)  # an error of the test, not a failure
    # Every retry the policy allows was paid for it, each time for the same reason.
    assert len(retried) == board.retry.retries >= 1
    assert all("RKNPU: job timeout" in reason for reason in retried)
    finding = error.board_log
    assert finding.log_class == "infrastructure"
    ids = [m.signature.id for m in finding.matches]
    assert ids == ["rknpu-job-timeout", "rknpu-soft-reset", "rknpu-failed-to-wait-job"]
    assert len(finding.kernel["lines"]) == 3  # this job's lines only, not the earlier attempts'
    # The agent's own error (a DeviceError, a failure by itself) is quoted, not what decides.
    assert "the agent reported DeviceError" in error.message


@pytest.mark.slow
def test_a_bpu_timeout_is_told_by_the_runtime_log(sim_farm: Farm) -> None:
    with pytest.raises(BoardLogError) as caught:
        run_model(session(sim_farm, "rdk-x5"), "conv3x3", image("rdk-x5"), faults=["npu-timeout"])
    finding = caught.value.board_log
    assert [m.log for m in finding.matches] == ["runtime"]
    assert "HB_DNN_TIMEOUT" in finding.runtime["lines"][0]


@pytest.mark.parametrize(
    ("fault", "signature", "log"),
    [
        ("oom-kill", "oom-killer", "kernel"),
        ("bad-model-version", "rknn-invalid-model-version", "runtime"),
    ],
)
def test_compatibility_is_a_failure_never_retried(
    sim_farm: Farm, fault: str, signature: str, log: str
) -> None:
    retried: list[str] = []
    with pytest.raises(BoardLogCompatibilityError) as caught:
        run_model(
            session(sim_farm, "rk3588"),
            "conv3x3",
            image("rk3588"),
            faults=[fault],
            on_retry=retried.append,
        )
    assert isinstance(caught.value, CompatibilityError)
    assert not isinstance(caught.value, TransportError)
    assert retried == []
    (match,) = caught.value.board_log.matches
    assert (match.signature.id, match.log) == (signature, log)


def test_a_fault_a_board_has_nothing_to_log_for_is_an_error(sim_farm: Farm) -> None:
    # No public KL730 driver message to cite: the fault says so rather than pass silently.
    with pytest.raises(DeviceError, match="no log signature of kl730"):
        run_model(session(sim_farm, "kl730"), "conv3x3", image("kl730"), faults=["npu-timeout"])


@pytest.mark.slow
def test_the_board_recovers_after_the_fault(sim_farm: Farm) -> None:
    board = session(sim_farm, "rk3588")
    with pytest.raises(BoardLogError):
        run_model(board, "conv3x3", image("rk3588"), faults=["npu-timeout"])
    after = run_model(board, "conv3x3", image("rk3588"))
    assert after.ok and after.board_log is not None and after.board_log.kernel["lines"] == []
