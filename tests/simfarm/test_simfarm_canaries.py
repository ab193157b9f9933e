"""Canaries across a real wire: a simulated board behind a real OpenSSH sshd on 127.0.0.1, the
job's pattern in job.json going out, the device buffers and result.json coming back through
SFTP, and the unwritten and stale checks firing there as they do on a local simulated board."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from npu_hil.harness.farm import Farm
from npu_hil.harness.farm.session import BoardSession
from npu_hil.harness.pipeline import run_model
from npu_hil.harness.transport.ssh import SshTransport
from npu_hil_testkit.simfarm import FarmState, down
from tests.simfarm.conftest import start_farm

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def ssh_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    state: FarmState = start_farm(
        tmp_path_factory.mktemp("farm"), targets=("rk3588",), boards=1, transports=("ssh",)
    )
    try:
        with Farm(state.inventory, workdir=tmp_path_factory.mktemp("work")) as farm:
            yield farm
    finally:
        down(state.dir)


def session(farm: Farm) -> BoardSession:
    (board,) = [b for b in farm.boards(targets=["rk3588"]) if b.transport.kind == "ssh"]
    chosen = farm.session(board)
    assert isinstance(chosen.transport, SshTransport)  # the real wire, not a local shortcut
    return chosen


X = {"input": np.random.default_rng(3).integers(0, 256, (1, 3, 5, 7)).astype(np.uint8)}


def test_unwritten_output_is_caught_over_ssh(ssh_farm: Farm) -> None:
    board = session(ssh_farm)
    clean = run_model(board, "conv3x3", X)
    assert clean.ok, clean.summary()
    assert all(t.diff.canary is not None for t in clean.tensors)  # filled on the far side
    faulty = run_model(board, "conv3x3", X, faults=[{"name": "unwritten-output"}])
    (out,) = faulty.outputs
    assert out.verdict == "unwritten", faulty.summary()
    assert out.diff.first_unwritten[0].offset + out.diff.first_unwritten[0].count == out.data.size


def test_stale_output_is_caught_over_ssh(ssh_farm: Farm) -> None:
    board = session(ssh_farm)
    quiet = run_model(board, "conv3x3", X, stale_check=True)
    assert quiet.ok, quiet.summary()
    stale = run_model(board, "conv3x3", X, faults=["stale-output"], stale_check=True)
    assert stale.outputs[0].verdict == "stale", stale.summary()
