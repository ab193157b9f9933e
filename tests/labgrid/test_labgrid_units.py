"""The labgrid layer's pure parts, without a coordinator (and without labgrid installed): the
configuration, resources → endpoints, and the typed error when labgrid is missing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from npu_hil.harness.farm import (
    InventoryError,
    load_inventory,
    parse_inventory,
    resolve_labgrid_boards,
)
from npu_hil.harness.labgrid.config import LabgridConfig
from npu_hil.harness.labgrid.endpoints import ResourceState, endpoints_of
from npu_hil.harness.labgrid.errors import LabgridError

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_config_normalises_the_address_and_checks_what_labgrid_would_refuse() -> None:
    assert LabgridConfig("farm-coord", places=("a",)).coordinator == "farm-coord:20408"
    assert LabgridConfig("10.0.0.2:2000", tags={"board": "rk3588"}).coordinator == "10.0.0.2:2000"
    assert LabgridConfig("::1", places=("a",)).coordinator == "[::1]:20408"
    assert LabgridConfig("[::1]:7", places=("a",)).coordinator == "[::1]:7"
    with pytest.raises(ValueError, match="expected places, tags or both"):
        LabgridConfig("h")
    with pytest.raises(ValueError, match="tag 'B'"):
        LabgridConfig("h", tags={"B": "x"})
    with pytest.raises(ValueError, match="place 'a b'"):
        LabgridConfig("h", places=("a b",))
    with pytest.raises(ValueError, match="wait -1"):
        LabgridConfig("h", places=("a",), wait=-1)
    with pytest.raises(ValueError, match="refresh 60"):
        LabgridConfig("h", places=("a",), refresh=60)
    with pytest.raises(ValueError, match="HOST:PORT"):
        LabgridConfig("h:port", places=("a",))


def _service(**params: object) -> ResourceState:
    return ResourceState(
        "NetworkService", "NetworkService", {"address": "10.0.0.5", "username": "root", **params}
    )


def _serial(name: str = "RawSerialPort", **params: object) -> ResourceState:
    return ResourceState(
        "NetworkSerialPort", name, {"host": "exp-1", "port": 4001, "speed": 1500000, **params}
    )


def test_network_service_becomes_an_ssh_endpoint_without_the_password() -> None:
    found = endpoints_of("p", [_service(port=2222, password="secret")])
    assert found.ssh is not None
    assert (found.ssh.host, found.ssh.port, found.ssh.user) == ("10.0.0.5", 2222, "root")
    assert "secret" not in repr(found)
    assert found.serial is None and found.power is None
    assert endpoints_of("p", [_service()]).ssh.port == 22  # type: ignore[union-attr]


def test_network_serial_port_url_follows_its_protocol() -> None:
    rfc = endpoints_of("p", [_serial()]).serial
    assert rfc is not None and (rfc.url, rfc.baudrate) == ("rfc2217://exp-1:4001", 1500000)
    raw = endpoints_of("p", [_serial(protocol="raw")]).serial
    assert raw is not None and raw.url == "socket://exp-1:4001"
    v6 = endpoints_of("p", [_serial(host="fd00::5")]).serial
    assert v6 is not None and v6.url == "rfc2217://[fd00::5]:4001"
    with pytest.raises(LabgridError, match="protocol 'telnet'"):
        endpoints_of("p", [_serial(protocol="telnet")])
    # No port: the exporter has no ser2net running for it (device unplugged).
    with pytest.raises(LabgridError, match="not available"):
        endpoints_of("p", [_serial(port=None)])


def test_unavailable_and_ambiguous_resources_are_errors() -> None:
    gone = ResourceState("NetworkService", "NetworkService", {"address": "a"}, avail=False)
    with pytest.raises(LabgridError, match="not available"):
        endpoints_of("p", [gone])
    with pytest.raises(LabgridError, match="2 serial resources"):
        endpoints_of("p", [_serial("a"), _serial("b")])
    chosen = endpoints_of("p", [_serial("debug"), _serial("console", port=4002)]).serial
    assert chosen is not None and chosen.url.endswith(":4002")
    with pytest.raises(LabgridError, match="names an interface"):
        endpoints_of("p", [_service(address="fe80::1%eth0")])


def test_power_resources_map_to_labgrids_drivers() -> None:
    pdu = ResourceState("NetworkPowerPort", "NetworkPowerPort", {"model": "gude", "host": "pdu"})
    daemon = ResourceState("PDUDaemonPort", "power", {"host": "h", "pdu": "p", "index": 1})
    assert endpoints_of("p", [pdu]).power.driver == "NetworkPowerDriver"  # type: ignore[union-attr]
    assert endpoints_of("p", [daemon]).power.driver == "PDUDaemonDriver"  # type: ignore[union-attr]
    other = ResourceState("USBVideo", "cam", {})
    assert endpoints_of("p", [other]) == endpoints_of("p", [])


def test_without_labgrid_the_harness_imports_and_says_what_to_install(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import importlib.abc, sys

        class NoLabgrid(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "labgrid" or name.startswith("labgrid."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, NoLabgrid())
        import npu_hil.harness.farm, npu_hil.harness.labgrid
        from npu_hil.harness.labgrid.config import LabgridConfig
        from npu_hil.harness.labgrid.errors import LabgridMissingError
        from npu_hil.harness.labgrid.places import LabgridPlaces
        from npu_hil.harness.errors import NpuHilError
        assert not issubclass(LabgridMissingError, npu_hil.harness.errors.TransportError)
        from pathlib import Path
        from npu_hil.harness.farm import InventoryError, load_inventory, resolve_labgrid_boards
        try:
            LabgridPlaces(LabgridConfig("127.0.0.1:1", places=("a",)), workdir=Path(sys.argv[1]))
        except LabgridMissingError as exc:
            print(exc.message)
        inventory = Path(sys.argv[1]) / "farm.yaml"
        inventory.write_text("labgrid: {coordinator: 127.0.0.1:1, places: [a]}")
        offline = load_inventory(inventory)  # reading the file asks no coordinator
        try:
            resolve_labgrid_boards(offline)
        except InventoryError as exc:
            assert isinstance(exc.__cause__, LabgridMissingError)
            print(exc.message)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    library, inventory = done.stdout.splitlines()
    assert "need labgrid, which is not installed" in library
    assert "pip install 'npu-hil[labgrid]'" in library
    assert inventory.startswith(f"{tmp_path / 'farm.yaml'}:1:10: labgrid: boards from a labgrid")
    assert "pip install 'npu-hil[labgrid]'" in inventory


def test_section_parses_offline_with_positions(tmp_path: Path) -> None:
    (tmp_path / "keys").mkdir()
    text = (
        "defaults: {adapter: rknnlite, fallback: sim, timeouts: {run: 5}}\n"
        "labgrid:\n"
        "  coordinator: coord.lan\n"
        "  places: [a-01, {place: b-02, target: kl730, adapter: kneron, workdir: /data}]\n"
        "  tags: {pool: npu}\n"
        "  wait: 0\n"
        "  prio: -1\n"
        "  prefer: serial\n"
        "  ssh: {key_file: keys/farm, host_key_policy: accept-new}\n"
        "  serial: {user: root, password_env: CONSOLE_PW}\n"
    )
    section = parse_inventory(text, source="farm.yaml", base=tmp_path).labgrid
    assert section is not None
    assert section.config.coordinator == "coord.lan:20408"
    assert section.config.places == ("a-01", "b-02") and dict(section.config.tags) == {
        "pool": "npu"
    }
    assert (section.config.wait, section.config.prio, section.prefer) == (0.0, -1.0, "serial")
    assert section.ssh.key_file == str(tmp_path / "keys" / "farm")
    assert section.ssh.host_key_policy == "accept-new" and section.ssh.host is None
    assert (section.serial.user, section.serial.password_env) == ("root", "CONSOLE_PW")
    b = section.entries.get("b-02")
    assert b is not None and (b.target, b.adapter, b.workdir) == ("kl730", "kneron", "/data")
    assert section.at["b-02"] == "farm.yaml:4:18: labgrid.places[1]"
    defaults = section.defaults
    assert (defaults.adapter, defaults.fallback, defaults.timeouts.run) == ("rknnlite", "sim", 5.0)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("{places: [a]}", "farm.yaml:1:10: labgrid: expected a coordinator (HOST:PORT)"),
        ("{coordinator: h}", "farm.yaml:1:10: labgrid: expected places, tags or both"),
        ("{coordinator: h, places: a}", "labgrid.places: expected a list of places"),
        ("{coordinator: h, places: [a, a]}", "labgrid.places[1]: 'a' listed twice"),
        ("{coordinator: h, places: [A_1]}", "labgrid.places[0]: expected a place name"),
        ("{coordinator: h, places: [{place: a, target: rk9}]}", "labgrid.places[0].target"),
        ("{coordinator: h, tags: {Pool: x}}", "tag 'Pool': labgrid wants a lowercase letter"),
        ("{coordinator: h, tags: [pool]}", "labgrid.tags: expected a mapping of tag: value"),
        (
            "{coordinator: h, places: [a], wait: -1}",
            "labgrid.wait: expected a number in [0, 86400], got -1",
        ),
        ("{coordinator: h, places: [a], prefer: usb}", "labgrid.prefer: expected one of ssh"),
        ("{coordinator: h, places: [a], ssh: {password: x}}", "secrets do not belong"),
        ("{coordinator: h, places: [a], exporter: x}", "labgrid.exporter: unknown key"),
    ],
)
def test_section_errors_say_where(section: str, message: str) -> None:
    with pytest.raises(InventoryError) as caught:
        parse_inventory(f"labgrid: {section}\n", source="farm.yaml")
    assert message in caught.value.message


@pytest.mark.needs_labgrid
def test_unreachable_coordinator_at_load(tmp_path: Path) -> None:
    from npu_hil_testkit.simfarm.procs import free_port

    address = f"127.0.0.1:{free_port()}"
    named = tmp_path / "named.yaml"
    named.write_text(
        f"labgrid: {{coordinator: '{address}', places: [{{place: a-01, target: rk3588}}]}}\n"
    )
    # Named places with their targets still make boards; their sessions fail later (and may
    # fall back to simulation) instead of the whole inventory failing.
    boards = resolve_labgrid_boards(load_inventory(named)).boards
    assert [(b.name, b.target, b.place, b.transport.kind) for b in boards] == [
        ("a-01", "rk3588", "a-01", "ssh")
    ]
    tagged = tmp_path / "tagged.yaml"
    tagged.write_text(f"labgrid: {{coordinator: '{address}', tags: {{pool: npu}}}}\n")
    offline = load_inventory(tagged)  # reading asks no coordinator: the farm does
    assert offline.boards == () and not offline.places_listed
    with pytest.raises(InventoryError, match="cannot reach the labgrid coordinator"):
        resolve_labgrid_boards(offline)
