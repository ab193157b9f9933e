"""The board's own logs across real wires: a simulated board behind a real OpenSSH sshd on
127.0.0.1 and one behind a pty serial console, each with its own kernel log (its Python exports
``NPU_HIL_KMSG``), the agent reading it there and the delta coming back in result.json. A clean
run is quiet, an NPU timeout is infrastructure (retried), a bad model version compatibility."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from npu_hil.harness.farm import Farm
from npu_hil.harness.farm.recovery import RetryPolicy
from npu_hil.harness.farm.session import BoardSession
from npu_hil.harness.pipeline import run_model
from npu_hil.harness.pipeline.boardlog import BoardLogCompatibilityError, BoardLogError
from npu_hil.harness.transport.serial_console import SerialTransport
from npu_hil.harness.transport.ssh import SshTransport
from npu_hil_testkit.simfarm import FarmState, down
from tests.simfarm.conftest import start_farm

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

KINDS = {"ssh": SshTransport, "serial": SerialTransport}


@pytest.fixture(scope="module")
def wired_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FarmState, Farm]]:
    state: FarmState = start_farm(
        tmp_path_factory.mktemp("farm"), targets=("rk3588",), boards=1, transports=tuple(KINDS)
    )
    try:
        retry = RetryPolicy(retries=1, backoff_s=0.01)
        with Farm(state.inventory, workdir=tmp_path_factory.mktemp("work"), retry=retry) as farm:
            yield state, farm
    finally:
        down(state.dir)


def session(farm: Farm, kind: str) -> BoardSession:
    (board,) = [b for b in farm.boards(targets=["rk3588"]) if b.transport.kind == kind]
    chosen = farm.session(board)
    assert isinstance(chosen.transport, KINDS[kind])  # the real wire, not a local shortcut
    return chosen


X = {"input": np.random.default_rng(3).integers(0, 256, (1, 3, 5, 7)).astype(np.uint8)}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_board_logs_come_back_over_the_wire(wired_farm: tuple[FarmState, Farm], kind: str) -> None:
    state, farm = wired_farm
    board = session(farm, kind)
    clean = run_model(board, "conv3x3", X, runtime_log_level=3)
    assert clean.ok, clean.summary()
    assert clean.board_log is not None
    assert clean.board_log.kernel == {"source": "kmsg", "lines": []}
    assert any(line.startswith("I sim: run") for line in clean.board_log.runtime["lines"])

    retried: list[str] = []
    with pytest.raises(BoardLogError) as caught:
        run_model(board, "conv3x3", X, faults=["npu-timeout"], on_retry=retried.append)
    assert len(retried) == 1 and "RKNPU: job timeout" in retried[0]
    assert caught.value.board_log.log_class == "infrastructure"
    # Written to this board's own kernel log on the far side, and to no other board's.
    kmsg = state.dir / "boards" / board.name / "root" / "dev" / "kmsg"
    assert "RKNPU: soft reset" in kmsg.read_text()

    with pytest.raises(BoardLogCompatibilityError) as bad:
        run_model(board, "conv3x3", X, faults=["bad-model-version"])
    assert "Invalid RKNN model version" in bad.value.board_log.runtime["lines"][0]
