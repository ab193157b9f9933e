"""Bringing a simulated farm down: everything it started stops (including what runs below its
processes), nothing else is touched, and doing it twice is harmless."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from npu_hil.harness.farm.inventory import load_inventory
from npu_hil_testkit.simfarm import SimFarmError, default_dir, down, load_state, status, up
from npu_hil_testkit.simfarm.procs import ProcessRecord, process_state, record_process
from npu_hil_testkit.simfarm.state import STATE_FILE, FarmState, save_state
from tests.simfarm.conftest import gone, of_kind, serial_transport, ssh_transport, start_farm

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e


def _descendants(pid: int) -> set[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True)
    children: dict[int, list[int]] = {}
    for line in out.stdout.splitlines():
        child, parent = (int(v) for v in line.split())
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    todo = list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        found.add(child)
        todo.extend(children.get(child, ()))
    return found


def test_down_stops_everything_it_started_and_is_idempotent(tmp_path: Path) -> None:
    farm = start_farm(
        tmp_path / "farm", targets=["rv1106"], transports=("ssh", "serial"), serial="rfc2217"
    )
    names = [record.name for record in farm.processes]
    assert names == ["sshd", "console:rv1106-serial-01", "ser2net:rv1106-serial-01"]
    boards = load_inventory(farm.inventory).boards
    serial = of_kind(boards, "serial")[0]
    assert serial.transport.port == f"rfc2217://127.0.0.1:{farm.ports['ser2net:rv1106-serial-01']}"
    with serial_transport(serial) as console:
        assert console.run(["echo", "net"], timeout=10).stdout == b"net\n"
    # An open SSH connection leaves sshd's per-connection process and a login shell running
    # below the listener, in sessions of their own: down must stop those too.
    ssh = ssh_transport(of_kind(boards, "ssh")[0])
    session = ssh.open_stream(["sleep", "300"])
    try:
        below: set[int] = set()
        deadline = time.monotonic() + 10
        while len(below) < 2 and time.monotonic() < deadline:
            below = _descendants(farm.processes[0].pid)
            time.sleep(0.05)
        assert below, "the SSH login did not show up below sshd"
        below |= _descendants(farm.processes[1].pid)  # the console's board shell
        results = down(farm.dir)
        assert [r.outcome for r in results] == ["terminated"] * 3
        for pid in [record.pid for record in farm.processes] + sorted(below):
            assert gone(pid), f"pid {pid} still running after down"
    finally:
        session.close(timeout=0)
        ssh.close()
    assert not (farm.dir / STATE_FILE).exists()
    assert not farm.inventory.exists()
    assert status(farm.dir) is None
    assert down(farm.dir) == []
    # The keys stay, so the next farm in this folder keeps its host key.
    again = up(farm.dir, targets=["rv1106"])
    try:
        assert (farm.dir / "ssh" / "host_ed25519").exists()
        assert again.ports["sshd"] > 0
    finally:
        down(farm.dir)


def _state_with(folder: Path, *records: ProcessRecord) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    save_state(
        FarmState(
            dir=folder,
            inventory=folder / "inventory.yaml",
            user="nobody",
            started="2026-01-01T00:00:00+00:00",
            processes=records,
            complete=True,
        )
    )


def test_a_recycled_pid_is_never_killed(tmp_path: Path) -> None:
    """A state file whose pid now names another process (other command line, or the same one
    started later) leaves that process alone."""
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        real = record_process("bystander", bystander)
        assert process_state(real) == "running"
        other_command = ProcessRecord(
            "console:x", real.pid, ("/usr/bin/socat", f"PTY,link={tmp_path}/tty"), real.start_time
        )
        started_later = ProcessRecord("sshd", real.pid, real.argv, real.start_time + 1)
        for record in (other_command, started_later):
            assert process_state(record) == "replaced"
            _state_with(tmp_path / "farm", record)
            results = down(tmp_path / "farm", timeout=0.5)
            assert [r.outcome for r in results] == ["replaced"]
            assert bystander.poll() is None, "down killed a process that was not the farm's"
            assert load_state(tmp_path / "farm") is None
    finally:
        bystander.kill()
        bystander.wait(5)


def test_up_replaces_a_farm_whose_processes_are_gone(tmp_path: Path) -> None:
    ended = subprocess.Popen(["sleep", "300"], start_new_session=True)
    record = record_process("sshd", ended)
    ended.kill()
    ended.wait(5)
    _state_with(tmp_path / "farm", record)
    farm = start_farm(tmp_path / "farm", targets=["rdk-x3"])
    try:
        assert [b.name for b in load_inventory(farm.inventory).boards] == ["rdk-x3-ssh-01"]
        assert process_state(record) == "stopped"
        assert process_state(farm.processes[0]) == "running"
    finally:
        down(farm.dir)


def test_a_damaged_state_file_is_refused_not_guessed(tmp_path: Path) -> None:
    folder = tmp_path / "farm"
    folder.mkdir()
    (folder / STATE_FILE).write_text(json.dumps({"format": 1, "processes": "many"}))
    with pytest.raises(SimFarmError, match="malformed farm state"):
        down(folder)
    with pytest.raises(SimFarmError, match="malformed farm state"):
        up(folder, targets=["rk3588"])
    assert (folder / STATE_FILE).exists()


def test_default_folder_is_per_user_and_stable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert default_dir() == default_dir()
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_dir() == tmp_path / "cache" / "npu-hil-simfarm"
