"""LabgridPlaces against a real coordinator and exporter: selection, acquisition, endpoints that
work, waiting for and refusing a place another client holds, refresh, power, release."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from npu_hil.harness.labgrid.config import LabgridConfig
from npu_hil.harness.labgrid.errors import LabgridError, PlaceBusyError, PlaceLostError
from npu_hil.harness.labgrid.places import LabgridPlaces, select_places
from npu_hil.harness.transport.serial_console import SerialTransport
from npu_hil.harness.transport.ssh import SshTransport
from tests.labgrid.lab import COLLEAGUE, RAW_PLACE, SERIAL_PLACE, SSH_PLACE, Lab


def places(lab: Lab, workdir: Path, **options: object) -> LabgridPlaces:
    settings: dict[str, object] = {"places": (SSH_PLACE,), "wait": 10.0, **options}
    return LabgridPlaces(LabgridConfig(lab.address, **settings), workdir=workdir)  # type: ignore[arg-type]


def test_select_by_name_and_tags(lab: Lab, workdir: Path) -> None:
    with places(lab, workdir, places=(RAW_PLACE,), tags={"target": "rk3588"}) as lg:
        chosen = select_places(lg.config, lg._client.places())
        assert [p.name for p in chosen] == [RAW_PLACE, SERIAL_PLACE, SSH_PLACE]
        assert chosen[2].tags["target"] == "rk3588"
        assert lg.held == ()


def test_unknown_place_lists_the_known_ones(lab: Lab, workdir: Path) -> None:
    with places(lab, workdir, places=("nope-01",)) as lg, pytest.raises(LabgridError) as caught:
        select_places(lg.config, lg._client.places())
    assert "no place 'nope-01'" in caught.value.message
    assert SSH_PLACE in caught.value.message


def test_acquire_maps_the_ssh_service_and_it_answers(lab: Lab, workdir: Path) -> None:
    farm = lab.farm
    with places(lab, workdir) as lg:
        endpoints = lg.acquire(SSH_PLACE)
        assert lab.acquired_by(SSH_PLACE) == lg.identity
        assert endpoints.ssh is not None and endpoints.serial is None
        assert f"{endpoints.ssh.host}:{endpoints.ssh.port}" == lab.board("rk3588-ssh-01")
        assert endpoints.ssh.user == farm.user
        assert endpoints.power is not None and endpoints.power.driver == "NetworkPowerDriver"
        with SshTransport(
            endpoints.ssh.host,
            endpoints.ssh.port,
            endpoints.ssh.user,
            workdir=str(workdir / "remote"),
            key_file=str(farm.dir / "ssh" / "client_ed25519"),
            known_hosts=str(farm.dir / "ssh" / "known_hosts"),
        ) as ssh:
            assert ssh.run(["echo", "over labgrid"], timeout=30).stdout == b"over labgrid\n"
    lab.wait_released(SSH_PLACE)


def test_exported_serial_port_is_rfc2217_through_ser2net(lab: Lab, workdir: Path) -> None:
    with places(lab, workdir, places=(SERIAL_PLACE,)) as lg:
        endpoints = lg.acquire(SERIAL_PLACE)
        assert endpoints.serial is not None and endpoints.ssh is None
        assert endpoints.serial.url.startswith("rfc2217://127.0.0.1:")
        with SerialTransport(endpoints.serial.url, workdir=str(workdir / "console")) as console:
            assert console.run(["echo", "console"], timeout=30).stdout == b"console\n"
    lab.wait_released(SERIAL_PLACE)


def test_raw_network_serial_port_is_a_socket_url(lab: Lab, workdir: Path) -> None:
    with places(lab, workdir, places=(RAW_PLACE,)) as lg:
        endpoints = lg.acquire(RAW_PLACE)
        assert endpoints.serial is not None and endpoints.serial.url.startswith("socket://")
        with SerialTransport(endpoints.serial.url, workdir=str(workdir / "console")) as console:
            assert console.run(["echo", "raw"], timeout=30).stdout == b"raw\n"


def test_reservation_goes_when_the_place_is_released(lab: Lab, workdir: Path) -> None:
    with places(lab, workdir) as lg:
        lg.acquire(SSH_PLACE)
        assert ({"name": SSH_PLACE}, "acquired") in lab.reservations()
        assert f"{lg.identity.split('/')[1]} " in lab.who()
        lg.release(SSH_PLACE)
        assert lab.acquired_by(SSH_PLACE) is None
        assert not lab.reserved(SSH_PLACE)


def test_busy_place_is_refused_at_once_with_wait_zero(
    lab: Lab, workdir: Path, colleague: list[str]
) -> None:
    lab.client("-p", SSH_PLACE, "acquire", env=COLLEAGUE)
    colleague.append(SSH_PLACE)
    with places(lab, workdir, wait=0.0) as lg:
        started = time.monotonic()
        with pytest.raises(PlaceBusyError) as caught:
            lg.acquire(SSH_PLACE)
        assert time.monotonic() - started < 5
    assert "acquired by desk-7/colleague" in caught.value.message
    # The refused reservation was cancelled, not left waiting in the queue.
    assert not lab.reserved(SSH_PLACE)


def test_busy_place_is_waited_for_until_released(
    lab: Lab, workdir: Path, colleague: list[str]
) -> None:
    lab.client("-p", SSH_PLACE, "acquire", env=COLLEAGUE)
    colleague.append(SSH_PLACE)
    releaser = threading.Timer(1.5, lambda: lab.client("-p", SSH_PLACE, "release", env=COLLEAGUE))
    with places(lab, workdir, wait=30.0) as lg:
        started = time.monotonic()
        releaser.start()
        try:
            lg.acquire(SSH_PLACE)
        finally:
            releaser.join()
        waited = time.monotonic() - started
        assert lab.acquired_by(SSH_PLACE) == lg.identity
        assert 1.5 <= waited < 15


def test_waiting_runs_out(lab: Lab, workdir: Path, colleague: list[str]) -> None:
    lab.client("-p", SSH_PLACE, "acquire", env=COLLEAGUE)
    colleague.append(SSH_PLACE)
    with places(lab, workdir, wait=1.0) as lg, pytest.raises(PlaceBusyError) as caught:
        lg.acquire(SSH_PLACE)
    assert "waited 1 s" in caught.value.message


def test_place_taken_away_is_noticed(lab: Lab, workdir: Path, colleague: list[str]) -> None:
    with places(lab, workdir, refresh=0.2) as lg:
        lg.acquire(SSH_PLACE)
        lab.client("-p", SSH_PLACE, "release", "--kick", env=COLLEAGUE)
        deadline = time.monotonic() + 10
        with pytest.raises(PlaceLostError) as caught:
            while time.monotonic() < deadline:
                lg.check(SSH_PLACE)
                time.sleep(0.05)
        assert "released by someone else" in caught.value.message
        # The lost place's reservation was given up: the colleague gets the place at once.
        lab.client("-p", SSH_PLACE, "acquire", env=COLLEAGUE)
        colleague.append(SSH_PLACE)
    # Closing did not release the colleague's acquisition.
    assert lab.acquired_by(SSH_PLACE) == "desk-7/colleague"


def test_power_cycle_through_labgrid(lab: Lab, workdir: Path) -> None:
    lab.power.requests.clear()
    with places(lab, workdir) as lg:
        lg.acquire(SSH_PLACE)
        lg.power(SSH_PLACE, "cycle", delay=0.1)
        lg.power(SSH_PLACE, "off")
    assert lab.power.requests == ["/relay/0/0", "/relay/0/1", "/relay/0/0"]


def test_power_needs_a_held_place(lab: Lab, workdir: Path) -> None:
    with places(lab, workdir) as lg, pytest.raises(LabgridError, match="not held"):
        lg.power(SSH_PLACE, "cycle")


@pytest.mark.needs_labgrid
def test_unreachable_coordinator_is_a_labgrid_error(workdir: Path) -> None:
    from npu_hil_testkit.simfarm.procs import free_port

    config = LabgridConfig(f"127.0.0.1:{free_port()}", places=("x-01",))
    started = time.monotonic()
    with pytest.raises(LabgridError, match="cannot connect"):
        LabgridPlaces(config, workdir=workdir)
    assert time.monotonic() - started < 20
