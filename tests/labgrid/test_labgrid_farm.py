"""The farm on labgrid places: the inventory's ``labgrid`` section resolved against a real
coordinator, and the regression suite (``npu_hil/harness/suite``) run by pytest on a
labgrid-exported board, alone, under pytest-xdist, against a second client holding the place, and
killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from npu_hil.harness.errors import TransportError
from npu_hil.harness.farm import Farm, Inventory, load_inventory
from npu_hil.harness.farm.labgrid_boards import FarmPlaces
from npu_hil.harness.farm.recovery import power_cycle
from tests.labgrid.lab import (
    COLLEAGUE,
    SERIAL_PLACE,
    SSH_PLACE,
    Lab,
    as_foreground,
    labgrid_inventory,
)

ROOT = Path(__file__).resolve().parents[2]
# One quick regression case: enough to prove a board was reached, acquired and released.
ONE_CASE = ("-k", "test_input_layout_round_trip and 1x1x1x1")


def run_suite(
    inventory: Path, tmp: Path, *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        suite_command(inventory, tmp, *args),
        cwd=ROOT,
        env=suite_env(tmp),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def suite_command(inventory: Path, tmp: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "npu_hil/harness/suite",
        "-p",
        "no:cacheprovider",
        "-q",
        "--inventory",
        str(inventory),
        "--backend",
        "hw",
        "--target",
        "rk3588",
        "--reports",
        str(tmp / "reports"),
        *args,
    ]


def suite_env(tmp: Path) -> dict[str, str]:
    # TMPDIR: the farm's workdir (locks, ledger) is the run's own, not the machine-wide one.
    (tmp / "tmp").mkdir(exist_ok=True)
    return {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp / "tmp")}


def outcome(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr


def farm_boards(path: Path, tmp_path: Path) -> Inventory:
    """The inventory a farm of ``path`` has: the farm asks the coordinator for the places."""
    with Farm(path, backend="hw", workdir=tmp_path / "work") as farm:
        return farm.inventory


def test_inventory_boards_are_the_selected_places(lab: Lab, tmp_path: Path) -> None:
    path = labgrid_inventory(lab, tmp_path / "farm.yaml", places=(SSH_PLACE, SERIAL_PLACE))
    assert {b.name for b in load_inventory(path).boards} == set()  # reading asks nobody
    inventory = farm_boards(path, tmp_path)
    ssh, serial = inventory.board(SSH_PLACE), inventory.board(SERIAL_PLACE)
    assert (ssh.target, ssh.backend, ssh.adapter, ssh.place) == ("rk3588", "hw", "sim", SSH_PLACE)
    assert ssh.transport.kind == "ssh" and ssh.transport.host is None  # known once acquired
    assert ssh.power is not None and ssh.power.labgrid == SSH_PLACE
    assert serial.transport.kind == "serial" and serial.power is None
    assert "target=rk3588" in ssh.tags and "labgrid" in ssh.tags
    assert lab.acquired_by(SSH_PLACE) is None  # loading reserves nothing


def test_tags_select_places_and_name_their_targets(lab: Lab, tmp_path: Path) -> None:
    path = tmp_path / "farm.yaml"
    path.write_text(
        f"labgrid: {{coordinator: '{lab.address}', tags: {{pool: npu}}}}\n", encoding="utf-8"
    )
    boards = {b.name: b.target for b in farm_boards(path, tmp_path).boards}
    assert boards == {SSH_PLACE: "rk3588", SERIAL_PLACE: "rk3588", "kl730-raw-01": "kl730"}


def test_unknown_place_is_an_inventory_error_at_its_line(lab: Lab, tmp_path: Path) -> None:
    path = tmp_path / "farm.yaml"
    path.write_text(
        f"labgrid:\n  coordinator: '{lab.address}'\n  places: [{SSH_PLACE}, nope-9]\n",
        encoding="utf-8",
    )
    from npu_hil.harness.farm import InventoryError

    with pytest.raises(InventoryError) as caught:
        farm_boards(path, tmp_path)
    assert caught.value.message.startswith(f"{path}:3:")
    assert "no place 'nope-9'" in caught.value.message


def test_farm_acquires_on_first_use_and_releases_on_close(lab: Lab, tmp_path: Path) -> None:
    inventory = load_inventory(labgrid_inventory(lab, tmp_path / "farm.yaml"))
    with Farm(inventory, backend="hw", workdir=tmp_path / "work") as farm:
        assert lab.acquired_by(SSH_PLACE) is None
        session = farm.session(SSH_PLACE)
        assert lab.acquired_by(SSH_PLACE) is not None
        assert session.transport_kind == "ssh"
        assert session.board.transport.port == int(lab.board("rk3588-ssh-01").split(":")[1])
        assert farm.health(SSH_PLACE).ok
    assert lab.acquired_by(SSH_PLACE) is None


def test_a_held_place_falls_back_to_simulation_where_allowed(
    lab: Lab, tmp_path: Path, colleague: list[str]
) -> None:
    lab.client("-p", SSH_PLACE, "acquire", env=COLLEAGUE)
    colleague.append(SSH_PLACE)
    inventory = load_inventory(
        labgrid_inventory(lab, tmp_path / "farm.yaml", wait=0, fallback="sim")
    )
    with Farm(inventory, backend="auto", workdir=tmp_path / "work") as farm:
        session = farm.session(SSH_PLACE)
        assert session.simulated and session.transport_kind == "local"
        assert "acquired by desk-7/colleague" in (session.fallback_reason or "")
        # Its power is the colleague's board: not switched.
        with pytest.raises(TransportError, match="not held by this run"):
            power_cycle(farm.inventory.board(SSH_PLACE), pause_s=0, labgrid=farm._places)
    assert lab.acquired_by(SSH_PLACE) == "desk-7/colleague"


def test_power_cycle_of_a_place_goes_through_labgrid(lab: Lab, tmp_path: Path) -> None:
    inventory = farm_boards(labgrid_inventory(lab, tmp_path / "farm.yaml"), tmp_path)
    lab.power.requests.clear()
    places = FarmPlaces(inventory.labgrid, tmp_path / "work")
    try:
        # Not held yet: power control acquires the place first.
        power_cycle(inventory.board(SSH_PLACE), pause_s=0.1, labgrid=places)
    finally:
        places.close()
    assert lab.power.requests == ["/relay/0/0", "/relay/0/1"]
    assert lab.acquired_by(SSH_PLACE) is None


def test_regression_suite_runs_on_a_labgrid_board(lab: Lab, tmp_path: Path) -> None:
    inventory = labgrid_inventory(lab, tmp_path / "farm.yaml")
    done = run_suite(inventory, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in outcome(done) and "failed" not in outcome(done)
    summary = json.loads(next((tmp_path / "reports").glob("*/summary.json")).read_text())
    assert SSH_PLACE in json.dumps(summary)
    assert lab.acquired_by(SSH_PLACE) is None


def test_xdist_workers_share_the_place(lab: Lab, tmp_path: Path) -> None:
    inventory = labgrid_inventory(lab, tmp_path / "farm.yaml")
    done = run_suite(inventory, tmp_path, "-n", "2", "-k", "round_trip")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert lab.acquired_by(SSH_PLACE) is None
    assert not lab.reserved(SSH_PLACE)


def test_a_held_place_is_refused_with_wait_zero(
    lab: Lab, tmp_path: Path, colleague: list[str]
) -> None:
    lab.client("-p", SSH_PLACE, "acquire", env=COLLEAGUE)
    colleague.append(SSH_PLACE)
    inventory = labgrid_inventory(lab, tmp_path / "farm.yaml", wait=0)
    done = run_suite(inventory, tmp_path, *ONE_CASE, "-rE")
    assert done.returncode == 1
    assert "error" in outcome(done)
    assert "acquired by desk-7/colleague" in done.stdout
    assert lab.acquired_by(SSH_PLACE) == "desk-7/colleague"


def test_a_held_place_is_waited_for(lab: Lab, tmp_path: Path, colleague: list[str]) -> None:
    lab.client("-p", SSH_PLACE, "acquire", env=COLLEAGUE)
    colleague.append(SSH_PLACE)
    inventory = labgrid_inventory(lab, tmp_path / "farm.yaml", wait=120)
    released = threading.Timer(4.0, lambda: lab.client("-p", SSH_PLACE, "release", env=COLLEAGUE))
    released.start()
    try:
        done = run_suite(inventory, tmp_path, *ONE_CASE)
    finally:
        released.join()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert lab.acquired_by(SSH_PLACE) is None


def _start_and_wait_for_the_place(
    lab: Lab, inventory: Path, tmp_path: Path, *args: str
) -> subprocess.Popen[str]:
    run = subprocess.Popen(
        as_foreground(suite_command(inventory, tmp_path, *args)),
        cwd=ROOT,
        env=suite_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while lab.acquired_by(SSH_PLACE) is None:
        if run.poll() is not None or time.monotonic() > deadline:
            run.kill()
            raise AssertionError(f"the run never acquired the place: {run.communicate()[0]}")
        time.sleep(0.05)
    return run


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_releases(lab: Lab, tmp_path: Path, signum: int) -> None:
    inventory = labgrid_inventory(lab, tmp_path / "farm.yaml")
    run = _start_and_wait_for_the_place(lab, inventory, tmp_path)
    time.sleep(0.5)
    run.send_signal(signum)
    output, _ = run.communicate(timeout=120)
    assert run.returncode != 0, output
    assert lab.acquired_by(SSH_PLACE) is None, output
    assert not lab.reserved(SSH_PLACE)


def test_a_killed_run_leaves_no_place_after_the_next_start(lab: Lab, tmp_path: Path) -> None:
    inventory = labgrid_inventory(lab, tmp_path / "farm.yaml")
    run = _start_and_wait_for_the_place(lab, inventory, tmp_path)
    identity = lab.acquired_by(SSH_PLACE)
    os.killpg(run.pid, signal.SIGKILL)
    run.communicate(timeout=60)
    # labgrid does not release a dead client's place: it stays acquired until someone does.
    time.sleep(1.0)
    assert lab.acquired_by(SSH_PLACE) == identity
    # The next run on this host (same farm workdir) releases it first, then uses the board.
    done = run_suite(
        inventory, tmp_path, *ONE_CASE, "-o", "log_cli=true", "--log-cli-level=WARNING"
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "a killed run left acquired: " + SSH_PLACE in done.stdout + done.stderr
    assert lab.acquired_by(SSH_PLACE) is None
    assert not lab.reserved(SSH_PLACE)
