"""Fixtures of the labgrid tests: one lab per session (see :mod:`tests.labgrid.lab`), a fresh
farm workdir per test, another labgrid user, and a check that no test leaves a place acquired."""

from __future__ import annotations

import importlib.util
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from npu_hil_testkit.simfarm import MissingToolError, SimFarmError, down, up
from npu_hil_testkit.simfarm.console import require_ser2net
from npu_hil_testkit.simfarm.procs import free_port, is_listening, spawn, wait_until
from tests.labgrid.lab import (
    COLLEAGUE,
    EXPORTER,
    RAW_PLACE,
    SERIAL_PLACE,
    SSH_PLACE,
    Lab,
    Observer,
    PowerSwitch,
    exporter_config,
    labgrid_tool,
    raw_console,
    stop_all,
    wait_for_resources,
)

HERE = Path(__file__).resolve().parent
HAVE_LABGRID = importlib.util.find_spec("labgrid") is not None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_labgrid: needs the labgrid extra installed")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without the labgrid extra, the tests that need labgrid are deselected, not skipped: they
    belong to ``tox -e labgrid``, which installs it (with pyserial-labgrid's ``serial``), while
    the plain environment proves the rest of this folder on pyserial."""
    if HAVE_LABGRID:
        return
    needs = [
        item
        for item in items
        if item.path.is_relative_to(HERE)
        and ("lab" in getattr(item, "fixturenames", ()) or item.get_closest_marker("needs_labgrid"))
    ]
    if needs:
        config.hook.pytest_deselected(items=needs)
        items[:] = [item for item in items if item not in needs]


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    coordinator_bin = labgrid_tool("labgrid-coordinator")
    exporter_bin = labgrid_tool("labgrid-exporter")
    client_bin = labgrid_tool("labgrid-client")
    root = tmp_path_factory.mktemp("labgrid")
    try:
        require_ser2net()
        farm = up(root / "farm", targets=("rk3588",), transports=("ssh", "serial"))
    except MissingToolError as exc:
        pytest.skip(exc.message)
    power = PowerSwitch()
    processes: list[subprocess.Popen[bytes]] = []
    observers: list[Observer] = []
    try:
        raw, raw_port = raw_console(root)
        processes += raw
        port = free_port()
        address = f"127.0.0.1:{port}"
        # The coordinator keeps places.yaml in its working folder: a fresh one per lab.
        (root / "coordinator").mkdir()
        coordinator = spawn(
            [coordinator_bin, "-l", address],
            log=root / "coordinator" / "coordinator.log",
            cwd=root / "coordinator",
        )
        processes.append(coordinator)
        wait_until(
            lambda: is_listening(port),
            coordinator,
            timeout=20,
            what="labgrid-coordinator",
            log=root / "coordinator" / "coordinator.log",
        )
        (root / "exporter").mkdir()
        config = root / "exporter" / "exporter.yaml"
        config.write_text(exporter_config(farm, power, raw_port), encoding="utf-8")
        exporter = spawn(
            [exporter_bin, "-c", address, "-n", EXPORTER, "--hostname", "127.0.0.1", str(config)],
            log=root / "exporter" / "exporter.log",
            cwd=root / "exporter",
        )
        processes.append(exporter)
        observer = Observer(address)
        observers.append(observer)
        lab = Lab(address, root, farm, power, client_bin, observer, processes)
        wait_for_resources(lab, (SSH_PLACE, SERIAL_PLACE, RAW_PLACE))
        for place, target in (
            (SSH_PLACE, "rk3588"),
            (SERIAL_PLACE, "rk3588"),
            (RAW_PLACE, "kl730"),
        ):
            observer.create_place(place, f"{EXPORTER}/{place}/*", {"target": target, "pool": "npu"})
        yield lab
    except SimFarmError as exc:
        pytest.fail(exc.message)
    finally:
        for observer in observers:
            observer.close()
        stop_all(processes)
        power.close()
        down(farm.dir)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A farm workdir of its own: the ledger of one test never sees another's."""
    return tmp_path / "farm-work"


@pytest.fixture
def colleague(lab: Lab) -> Iterator[list[str]]:
    """Another labgrid user (another host and user name); what it still holds is released when
    the test ends. Append the places it acquires."""
    held: list[str] = []
    yield held
    for place in held:
        lab.client("-p", place, "release", env=COLLEAGUE, check=False)


@pytest.fixture(autouse=True)
def _nothing_left_acquired(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test leaves the lab's places free and unreserved, or the next test would wait on
    them: what one leaves is freed (so one failure does not fail the tests after it) and fails
    it."""
    yield
    if "lab" not in request.fixturenames:
        return
    lab: Lab = request.getfixturevalue("lab")
    leftovers = [p for p in (SSH_PLACE, SERIAL_PLACE, RAW_PLACE) if lab.acquired_by(p)]
    for place in leftovers:
        lab.client("-p", place, "release", "--kick", check=False)
    reserved = lab.cancel_reservations((SSH_PLACE, SERIAL_PLACE, RAW_PLACE))
    assert not leftovers, f"places left acquired: {leftovers}"
    assert not reserved, f"places left reserved: {reserved}"
