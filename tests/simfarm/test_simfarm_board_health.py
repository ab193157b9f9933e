"""Board health kept across runs over a real wire: a simulated board behind a real OpenSSH sshd
on 127.0.0.1 passes its golden job over SSH, goes bad when its circuit breaker opens, and the
next run (a new farm, nothing shared but the folder) refuses it at once with the cause."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.farm import NO_RETRY, BoardBrokenError, BoardUnhealthyError, Farm
from npu_hil.harness.pipeline import run_model
from npu_hil.harness.pipeline.golden import golden_job
from npu_hil.harness.transport.ssh import SshTransport
from npu_hil_testkit.simfarm import FarmState, down
from tests.simfarm.conftest import start_farm

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

X = {"input": np.zeros((1, 3, 2, 2), dtype=np.uint8)}


@pytest.fixture(scope="module")
def ssh_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FarmState]:
    state = start_farm(
        tmp_path_factory.mktemp("farm"), targets=("rk3588",), boards=1, transports=("ssh",)
    )
    try:
        yield state
    finally:
        down(state.dir)


def test_a_board_gone_bad_over_ssh_is_refused_by_the_next_run(
    ssh_farm: FarmState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NPU_HIL_HEALTH_DIR")  # under the inventory's key, as a farm keeps it
    work = tmp_path / "work"
    with Farm(
        ssh_farm.inventory,
        workdir=work,
        retry=NO_RETRY,
        breaker_threshold=1,
        health_job=golden_job,
    ) as first:
        (board,) = first.boards()
        assert board.power is None  # refused, not power-cycled, below
        session = first.ready(board)  # the golden job ran over SSH
        assert isinstance(session.transport, SshTransport)
        health = first.health(board)
        assert health.golden.startswith("golden job passed")
        assert health.identity["state"] == "match"
        with pytest.raises(BoardBrokenError):
            run_model(session, "identity", X, faults=[{"name": "crash", "signal": "SIGKILL"}])
    kept = first.health_store.read(board.name)
    assert kept.state == "bad" and "SIGKILL" in kept.cause
    assert first.health_store.path(board.name).is_file()
    assert first.health_store.folder.parent == work / "health"
    with Farm(ssh_farm.inventory, workdir=work) as second:
        clock = time.monotonic()
        with pytest.raises(BoardUnhealthyError, match=f"{board.name} is marked bad since"):
            second.ready(board.name)
        assert time.monotonic() - clock < 0.5  # no SSH connection was made
