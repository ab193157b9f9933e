"""A running simulated farm: its inventory parses, every board answers over its real transport,
and the board agent runs there with the simulated runtime."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.agent.protocol import InputSpec, JobSpec
from npu_hil.harness.farm.inventory import load_inventory
from npu_hil.harness.models import build, save
from npu_hil_testkit.simfarm import FarmState, SimFarmError, status, up
from npu_hil_testkit.simfarm.inventory import checkout_manifest
from tests.simfarm.conftest import TARGETS, of_kind, serial_transport, ssh_transport

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e


def test_inventory_parses_and_describes_every_board(farm: FarmState) -> None:
    inventory = load_inventory(farm.inventory)
    names = [board.name for board in inventory.boards]
    assert names == [
        f"{target}-{kind}-{index:02d}"
        for target in TARGETS
        for kind in ("ssh", "serial")
        for index in (1, 2)
    ]
    assert [board.name for board in farm.boards] == names
    assert inventory.manifest == checkout_manifest()
    python = farm.dir / "bin" / "python3"
    assert os.access(python, os.X_OK)
    sshd_port = farm.ports["sshd"]
    for board in inventory.boards:
        # Reached through a real transport, but the runtime is the simulated one.
        assert (board.backend, board.adapter, board.fallback) == ("hw", "sim", "none")
        assert board.python == str(farm.dir / "boards" / board.name / "bin" / "python3")
        assert board.workdir == str(farm.dir / "boards" / board.name / "work")
        if board.transport.kind == "ssh":
            assert board.transport.port == sshd_port
            assert board.transport.host_key_policy == "strict"
        else:
            assert board.transport.port == str(farm.dir / "boards" / board.name / "tty")
            assert board.transport.baudrate == 115200
    known_hosts = (farm.dir / "ssh" / "known_hosts").read_text()
    host_pub = (farm.dir / "ssh" / "host_ed25519.pub").read_text().split()[:2]
    assert known_hosts == f"[127.0.0.1]:{sshd_port} {' '.join(host_pub)}\n"


def test_python_wrapper_makes_the_harness_importable(farm: FarmState) -> None:
    done = subprocess.run(
        [str(farm.dir / "bin" / "python3"), "-c", "import npu_hil.harness.sim; print('ok')"],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        cwd="/",
        capture_output=True,
        timeout=60,
    )
    assert done.stdout == b"ok\n", done.stderr


def test_every_ssh_board_answers_with_strict_host_keys(farm: FarmState) -> None:
    boards = of_kind(load_inventory(farm.inventory).boards, "ssh")
    assert len(boards) == 4
    for board in boards:
        transport = ssh_transport(board)
        try:
            done = transport.run(["sh", "-c", 'echo "$0 $(pwd)"', board.name], timeout=20)
        finally:
            transport.close()
        assert done.returncode == 0, done.stderr
        assert done.stdout.decode() == f"{board.name} {board.workdir}\n"


def test_every_serial_board_answers_on_its_own_console(farm: FarmState) -> None:
    boards = of_kind(load_inventory(farm.inventory).boards, "serial")
    assert len(boards) == 4
    for board in boards:
        with serial_transport(board) as transport:
            done = transport.run(["echo", board.name], timeout=10)
            assert (done.returncode, done.stdout) == (0, f"{board.name}\n".encode())
            assert transport.run(["pwd"], timeout=10).stdout.decode().strip() == board.workdir


def _job(tmp_path: Path, target: str) -> tuple[JobSpec, dict[str, np.ndarray]]:
    model = save(build("conv1x1", (1, 3, 3, 5)), tmp_path / "model.onnx")
    x = np.random.default_rng(3).integers(0, 256, (1, 3, 3, 5), dtype=np.uint8)
    spec = JobSpec(
        job_id=f"simfarm-{target}",
        adapter="sim",
        model=model,
        inputs=(InputSpec("input", "NCHW", (1, 3, 3, 5), "uint8"),),
        adapter_options={"target": target},
        load_timeout_s=60,
        run_timeout_s=60,
    )
    return spec, {"input": x}


def test_agent_session_over_ssh_pings_and_runs_the_sim_runtime(
    farm: FarmState, tmp_path: Path
) -> None:
    board = of_kind(load_inventory(farm.inventory).boards, "ssh")[0]
    transport = ssh_transport(board)
    try:
        with AgentClient(transport) as client:
            pong = client.ping()
            assert isinstance(pong.get("pid"), int)
            assert client.hello.get("op") == "hello"
            versions = client.versions("sim", {"target": board.target})
            assert versions, "the sim adapter reported no versions"
            spec, inputs = _job(tmp_path, board.target)
            result = client.submit(spec, inputs)
            assert result.ok, result
            assert result.outputs
    finally:
        transport.close()


def test_agent_one_shot_job_over_a_serial_console(farm: FarmState, tmp_path: Path) -> None:
    # A console carries the control shell, so no resident agent (and no ping, which
    # is a session request) can run beside it: one agent process per job instead.
    # A Rockchip board: the model's uint8 input suits its runtime (KL730 takes signed data).
    board = [
        b for b in of_kind(load_inventory(farm.inventory).boards, "serial") if b.target == "rk3588"
    ][-1]
    spec, inputs = _job(tmp_path, board.target)
    with (
        serial_transport(board, command_timeout=20.0) as transport,
        AgentClient(transport, resident=False) as client,
    ):
        result = client.submit(spec, inputs)
        assert result.ok, result
        assert result.outputs


def test_status_reports_every_process_alive(farm: FarmState) -> None:
    current = status(farm.dir)
    assert current is not None and current.running
    names = [record.name for record, _ in current.processes]
    serial = [b.name for b in farm.boards if b.transport == "serial"]
    # One sshd for all SSH boards, one console per serial board.
    assert names == ["sshd", *(f"console:{name}" for name in serial)]
    assert {state for _, state in current.processes} == {"running"}


def test_up_on_a_running_farm_refuses_and_leaves_it_alone(farm: FarmState) -> None:
    with pytest.raises(SimFarmError, match="already up") as info:
        up(farm.dir, targets=["rk3588"])
    assert f"npu-hil simfarm down --dir {farm.dir}" in info.value.message
    current = status(farm.dir)
    assert current is not None and current.running
    assert [r.pid for r, _ in current.processes] == [r.pid for r in farm.processes]
    assert load_inventory(farm.inventory).boards[0].name == farm.boards[0].name
