"""The cross-API check across a real wire: simulated boards behind a real OpenSSH sshd on
127.0.0.1, each job sent twice (the board's zero-copy path and the vendor's normal API, the
second with its own adapter options) through SFTP, and the two results compared on this side:
the unaligned-width fault is caught naming both paths and the first differing element, a clean
run stays quiet, and a Kneron board says the check does not apply."""

from __future__ import annotations

import re
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

TARGETS = ("rk3588", "rdk-x5", "kl730")
OTHER = {"rk3588": "rknnlite (normal API, simulated)", "rdk-x5": "hobot (hobot_dnn, simulated)"}


@pytest.fixture(scope="module")
def ssh_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    state: FarmState = start_farm(
        tmp_path_factory.mktemp("farm"), targets=TARGETS, boards=1, transports=("ssh",)
    )
    try:
        with Farm(state.inventory, workdir=tmp_path_factory.mktemp("work")) as farm:
            yield farm
    finally:
        down(state.dir)


def session(farm: Farm, target: str) -> BoardSession:
    (board,) = [b for b in farm.boards(targets=[target]) if b.transport.kind == "ssh"]
    chosen = farm.session(board)
    assert isinstance(chosen.transport, SshTransport)  # the real wire, not a local shortcut
    return chosen


def image(target: str) -> dict[str, np.ndarray]:
    dtype = np.int8 if target == "kl730" else np.uint8
    return {"input": np.random.default_rng(3).integers(0, 128, (1, 3, 5, 7)).astype(dtype)}


@pytest.mark.parametrize("target", sorted(OTHER))
def test_the_paths_agree_on_a_clean_run_and_disagree_under_the_fault_over_ssh(
    ssh_farm: Farm, target: str
) -> None:
    board = session(ssh_farm, target)
    clean = run_model(board, "conv3x3", image(target), cross_api=True)
    assert clean.ok, clean.summary()
    assert clean.cross_api is not None and clean.cross_api.applicable
    assert all(t.verdict == "equal" for t in clean.outputs)

    skewed = run_model(board, "conv3x3", image(target), faults=["unaligned-width"], cross_api=True)
    (out,) = skewed.outputs
    assert out.verdict == "cross-api" and out.diff.ok, skewed.summary()
    assert "(zero-copy, simulated)" in out.cross_api and OTHER[target] in out.cross_api
    assert re.search(r"the first at \[0, \d+, \d+, \d+\] \(flat \d+\): ", out.cross_api)


def test_kneron_is_not_applicable_over_ssh(ssh_farm: Farm) -> None:
    result = run_model(session(ssh_farm, "kl730"), "conv3x3", image("kl730"), cross_api=True)
    assert result.ok, result.summary()
    assert result.cross_api is not None
    assert result.cross_api.note == "not applicable (one API path: kneron)"
