"""A soak over a real wire: a simulated board behind a real OpenSSH sshd on 127.0.0.1, two
contexts (two agents on one SSH link) at once, the memory request answered across the link; a
clean soak passes, and the same board with a leaking runtime fails on its slope."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from npu_hil.harness.farm import Farm
from npu_hil.harness.soak import SoakPlan, judge, soak
from npu_hil.harness.transport.ssh import SshTransport
from npu_hil_testkit.simfarm import FarmState, down
from tests.simfarm.conftest import start_farm

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

# Long enough, at the speed of a framed job over SSH (a few ms), for the samples a slope needs.
PLAN = SoakPlan(("conv1x1",), contexts=2, iterations=60, sample_every_s=0.02)


@pytest.fixture(scope="module")
def ssh_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FarmState]:
    state: FarmState = start_farm(
        tmp_path_factory.mktemp("farm"), targets=("rk3588",), boards=1, transports=("ssh",)
    )
    try:
        yield state
    finally:
        down(state.dir)


def _ssh_board(farm: Farm) -> str:
    (board,) = [b for b in farm.boards(targets=["rk3588"]) if b.transport.kind == "ssh"]
    assert isinstance(farm.session(board).transport, SshTransport)  # the real wire
    return board.name


def test_a_clean_soak_over_ssh_passes(ssh_state: FarmState, tmp_path: Path) -> None:
    with Farm(ssh_state.inventory, workdir=tmp_path / "work") as farm:
        name = _ssh_board(farm)
        run = soak(farm, farm.boards(names=[name]), PLAN)
    verdict = judge(run)
    assert verdict.passed, verdict.reasons
    (part,) = run.boards
    assert part.jobs == 120 and part.errors == 0 and part.simulated
    assert part.max_concurrent == 2
    pids = {c.pids[0] for c in part.contexts}
    assert len(pids) == 2  # two agents on the board, each sampled through its own session
    assert all(s.rss_kib is not None for s in part.samples)


def test_a_leak_over_ssh_fails_on_the_slope(ssh_state: FarmState, tmp_path: Path) -> None:
    with Farm(ssh_state.inventory, workdir=tmp_path / "work") as probe:
        name = _ssh_board(probe)
    faults = {name: [{"name": "leak", "kib": 128}]}
    with Farm(ssh_state.inventory, workdir=tmp_path / "work", sim_faults=faults) as farm:
        run = soak(farm, farm.boards(names=[name]), PLAN)
    verdict = judge(run)
    assert not verdict.passed
    assert len(verdict.reasons) == 2
    assert all("leak slope" in r for r in verdict.reasons)
