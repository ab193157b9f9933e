"""The farm: board selection, simulated sessions and health, fallback from an unreachable real
board, power commands, and the cross-process lock per board."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from npu_hil.harness.errors import TransportError
from npu_hil.harness.farm import Board, Farm, parse_inventory, power_cycle
from npu_hil.harness.models import ManifestError

ROOT = Path(__file__).resolve().parents[2]
PY = json.dumps(sys.executable)

HW_FARM = f"""\
boards:
  - name: rk3588-hw
    target: rk3588
    backend: hw
    transport: {{kind: ssh, host: 127.0.0.1, port: 1}}
    fallback: sim
  - name: rdk-x5-hw
    target: rdk-x5
    backend: hw
    transport: {{kind: serial, port: /dev/ttyUSB9}}
    fallback: none
  - name: kl730-sim
    target: kl730
    backend: sim
    transport: local
  - name: rk3566-pdu
    target: rk3566
    backend: hw
    transport: {{kind: ssh, host: 127.0.0.1}}
    power: {{command: {{cycle: [{PY}, -c, "open('cycled', 'a').write('x')"]}}}}
  - name: rk3566-bad-pdu
    target: rk3566
    backend: hw
    transport: {{kind: ssh, host: 127.0.0.1}}
    timeouts: {{power: 0.5}}
    power: {{command: {{on: [{PY}, -c, "import time; time.sleep(30)"], off: [false]}}}}
"""


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    with Farm(ROOT / "inventory.yaml", workdir=tmp_path_factory.mktemp("farm")) as farm:
        yield farm


def hw_farm(tmp_path: Path, backend: str = "auto") -> Farm:
    return Farm(parse_inventory(HW_FARM, source="hw.yaml"), backend=backend, workdir=tmp_path)


def names(boards: list[Board]) -> list[str]:
    return [b.name for b in boards]


def test_board_selection(shipped: Farm) -> None:
    assert len(shipped.boards()) == 15
    assert names(shipped.boards(socs=["rk3588", "kl730"])) == ["rk3588-01", "kl730-01"]
    assert names(shipped.boards(targets="rv1106")) == ["rv1106-01"]
    assert names(shipped.boards(vendors=["horizon"])) == ["rdk-x3-01", "rdk-x5-01", "rdk-s100-01"]
    assert len(shipped.boards(vendors=["rockchip"])) == 11
    assert names(shipped.boards(vendors=["rockchip"], names=["rk3566-01", "kl730-01"])) == [
        "rk3566-01"
    ]
    assert shipped.boards(socs=["rk9999"]) == []
    # A marker's SoCs and the command line's --target narrow each other.
    assert names(shipped.boards(socs=["rk3588", "rv1106"], targets=["rk3588"])) == ["rk3588-01"]
    assert shipped.boards(socs=["rk3588"], vendors=["horizon"]) == []


def test_backend_hw_leaves_simulated_boards_out(tmp_path: Path) -> None:
    assert "kl730-sim" not in names(hw_farm(tmp_path, "hw").boards())
    assert "kl730-sim" in names(hw_farm(tmp_path, "auto").boards())


@pytest.mark.slow
def test_a_simulated_session_and_its_health(shipped: Farm) -> None:
    session = shipped.session("rk3566-01")
    assert session is shipped.session(shipped.inventory.board("rk3566-01"))
    assert session.simulated and session.fallback_reason is None
    assert (session.adapter, session.adapter_options) == ("sim", {"target": "rk3566"})
    health = shipped.health("rk3566-01")
    assert health.ok and health.error is None and health.simulated
    assert health.versions["target"] == "rk3566"
    assert health.versions["runtime"] == "npu-hil simulated NPU"
    assert shipped.health("rk3566-01") is health  # checked once
    pid = session.client.agent_pid
    session.restart()
    assert shipped.health("rk3566-01").ok and session.client.ping()["pid"] != pid


@pytest.mark.slow
def test_an_unreachable_board_falls_back_to_sim(tmp_path: Path) -> None:
    farm = hw_farm(tmp_path)
    try:
        session = farm.session("rk3588-hw")
        assert session.simulated and session.adapter == "sim"
        assert session.fallback_reason is not None
        assert session.fallback_reason.startswith("rk3588-hw: ssh root@127.0.0.1:1: no connection")
        health = farm.health("rk3588-hw")
        assert health.ok and health.simulated and health.fallback_reason
    finally:
        farm.close()


@pytest.mark.slow
def test_no_fallback_is_an_infrastructure_error(tmp_path: Path) -> None:
    farm = hw_farm(tmp_path)
    with pytest.raises(TransportError, match="rdk-x5-hw: serial /dev/ttyUSB9: cannot open"):
        farm.session("rdk-x5-hw")
    health = farm.health("rdk-x5-hw")
    assert not health.ok and health.error is not None
    assert health.error.startswith("TransportError: rdk-x5-hw: serial /dev/ttyUSB9")
    with pytest.raises(TransportError):  # --backend hw never falls back
        hw_farm(tmp_path, "hw").session("rk3588-hw")


def test_backend_sim_runs_real_boards_simulated(tmp_path: Path) -> None:
    farm = hw_farm(tmp_path, "sim")
    session = farm.session("rdk-x5-hw")
    assert (
        session.simulated and session.fallback_reason == "--backend sim runs every board simulated"
    )
    farm.close()


def test_power_cycle_runs_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    farm = hw_farm(tmp_path)
    farm.power_cycle("rk3566-pdu")
    assert (tmp_path / "cycled").read_text() == "x"


@pytest.mark.slow
def test_power_failures_are_transport_errors(tmp_path: Path) -> None:
    farm = hw_farm(tmp_path)
    board = farm.inventory.board("rk3566-bad-pdu")
    with pytest.raises(TransportError, match=r"power off .* exit status 1"):
        power_cycle(board, pause_s=0)
    with pytest.raises(TransportError, match="no power control"):
        farm.power_cycle("rk3588-hw")
    on_only = parse_inventory(
        f"boards:\n  - {{name: b, target: kl730, timeouts: {{power: 0.5}}, power: {{command: "
        f"{{on: [{PY}, -c, 'import time; time.sleep(30)'], off: [true]}}}}}}\n"
    ).boards[0]
    started = time.monotonic()
    with pytest.raises(TransportError, match=r"power on .* did not end within"):
        power_cycle(on_only, pause_s=0)
    assert time.monotonic() - started < 10
    labgrid = parse_inventory(
        "boards:\n  - {name: b, target: kl730, power: {labgrid: place-1}}\n"
    ).boards[0]
    with pytest.raises(TransportError, match=r"labgrid place 'place-1' needs the farm's"):
        power_cycle(labgrid)


LOCKER = """
import sys, time
from npu_hil.harness.farm import Farm
farm = Farm(sys.argv[1], workdir=sys.argv[2])
print("waiting", flush=True)
with farm.lock("rk3588-01"):
    print(time.time(), flush=True)
"""


@pytest.mark.slow
def test_a_second_process_waits_for_the_board(tmp_path: Path) -> None:
    farm = Farm(ROOT / "inventory.yaml", workdir=tmp_path)
    with farm.lock("rk3588-01"):
        child = subprocess.Popen(
            [sys.executable, "-c", LOCKER, str(ROOT / "inventory.yaml"), str(tmp_path)],
            stdout=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "waiting"
        time.sleep(0.5)
        released = time.time()
    acquired = float(child.stdout.readline())
    assert child.wait(30) == 0
    assert acquired >= released
    # Other boards are not held up by it.
    with farm.lock("rk3566-01"), farm.lock("rk3588-01", timeout=1):
        pass


@pytest.mark.slow
def test_power_cycling_a_simulated_board_restarts_its_agent(shipped: Farm) -> None:
    session = shipped.session("rv1103-01")
    before = shipped.health("rv1103-01")
    pid = session.client.ping()["pid"]
    shipped.power_cycle("rv1103-01")
    after = shipped.health("rv1103-01")
    assert after.ok and after is not before  # health is looked at again after a power cycle
    assert session.client.ping()["pid"] != pid


@pytest.mark.slow
def test_a_broken_manifest_does_not_stop_simulated_boards(tmp_path: Path) -> None:
    inventory = parse_inventory(
        "manifest: missing.json\nboards:\n  - {name: s, target: rk3562}\n", base=tmp_path
    )
    with Farm(inventory, workdir=tmp_path) as farm:
        assert farm.health("s").ok
        session = farm.session("s")
        with pytest.raises(ManifestError, match="no such manifest file"):
            _ = session.manifest
