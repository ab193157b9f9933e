"""The inventory: the shipped file, the schema's defaults, and errors that say file:line:column,
the key path, what was expected and what came."""

from __future__ import annotations

from pathlib import Path

import pytest

from npu_hil.harness.codec import known_targets
from npu_hil.harness.farm import InventoryError, load_inventory, parse_inventory

ROOT = Path(__file__).resolve().parents[2]

FARM = """\
# A farm of real boards and simulated stand-ins.
defaults:
  fallback: sim
  python: /usr bin/python3
  timeouts: {run: 30}
manifest: models/manifest.yaml
boards:
  - name: rk3588-01
    target: rk3588
    backend: hw
    transport: {kind: ssh, host: 10.0.0.21, user: root, key_file: ~/.ssh/farm}
    tags: [rack-a, fast]
    power: {command: {cycle: "pdu-ctl cycle 3"}}
    timeouts: {load: 300}
  - name: rdk-x5-01
    target: rdk-x5
    backend: hw
    fallback: none
    transport: {kind: serial, port: "rfc2217://exporter:4001", password_env: RDK_PASSWORD}
    power: {command: {on: [pdu-ctl, on, 4], off: [pdu-ctl, off, 4]}}
  - name: kl730-01
    target: kl730
    backend: hw
    transport: {kind: ssh, host: kl730.lab, port: 2222}
    adapter: kneron
    power: {labgrid: kl730-place}
  - {name: rv1106-sim, target: rv1106, transport: local}
"""


def write(tmp_path: Path, text: str, name: str = "farm.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(InventoryError) as exc:
        load_inventory(write(tmp_path, text))
    message = str(exc.value)
    assert message.startswith(str(tmp_path / "farm.yaml") + ":")
    return message[len(str(tmp_path)) + 1 :]


def test_the_shipped_inventory_has_one_simulated_board_per_target() -> None:
    inventory = load_inventory(ROOT / "inventory.yaml")
    assert len(inventory.boards) == 15
    assert sorted(b.target for b in inventory.boards) == sorted(known_targets())
    assert all(b.simulated and b.adapter == "sim" for b in inventory.boards)
    assert {b.transport.kind for b in inventory.boards} == {"local"}
    assert {b.fallback for b in inventory.boards} == {"sim"}
    assert inventory.board("rdk-s100-01").vendor == "horizon"


def test_a_farm_file_with_every_kind_of_board(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, FARM))
    assert inventory.manifest == (tmp_path / "models" / "manifest.yaml").resolve()
    rk, rdk, kl, sim = inventory.boards
    assert (rk.vendor, rk.adapter, rk.simulated, rk.fallback) == (
        "rockchip",
        "rknn_native",
        False,
        "sim",
    )
    assert rk.transport.port == 22 and rk.transport.host_key_policy == "strict"
    assert rk.tags == ("rack-a", "fast") and rk.python == "/usr bin/python3"
    assert rk.power is not None and rk.power.cycle == ("pdu-ctl", "cycle", "3")
    assert (rk.timeouts.load, rk.timeouts.run) == (300.0, 30.0)
    assert (rdk.vendor, rdk.adapter, rdk.fallback) == ("horizon", "hobot_native", "none")
    assert rdk.transport.port == "rfc2217://exporter:4001" and rdk.transport.baudrate == 115200
    assert rdk.transport.password_env == "RDK_PASSWORD"
    assert rdk.power is not None and rdk.power.off == ("pdu-ctl", "off", "4")
    assert rdk.power.on == ("pdu-ctl", "on", "4")  # words as written, not YAML 1.1 booleans
    assert (kl.vendor, kl.adapter, kl.transport.port) == ("kneron", "kneron", 2222)
    assert kl.power is not None and kl.power.labgrid == "kl730-place"
    assert (sim.backend, sim.adapter, sim.simulated) == ("sim", "sim", True)


def test_the_users_example_error(tmp_path: Path) -> None:
    """``farm.yaml:23:7: boards[4].transport.port: expected an integer, got "22a"``."""
    boards = "".join(f"  - {{name: b{i}, target: rk3588, transport: local}}\n" for i in range(4))
    text = (
        "# farm\n" * 16
        + "boards:\n"
        + boards
        + ("  - {name: b4, target: rk3588, transport: {kind: ssh, host: h, port:\n      22a}}\n")
    )
    assert error_of(tmp_path, text) == (
        'farm.yaml:23:7: boards[4].transport.port: expected an integer, got "22a"'
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "boards:\n  - name: a\n    target: rk3588\n    transport:\n      kind: ssh\n"
            "      host: h\n      password: hunter2\n",
            "farm.yaml:7:7: boards[0].transport.password: secrets do not belong in the "
            "inventory; use password_env (the name of an environment variable) instead",
        ),
        (
            "boards:\n  - name: a\n    target: rk3588\n"
            "    transport: {kind: ssh, host: h, key: x}\n",
            "farm.yaml:4:37: boards[0].transport.key: secrets do not belong in the inventory; "
            "use key_file instead",
        ),
        (
            "boards:\n  - name: a\n    targt: rk3588\n",
            "farm.yaml:3:5: boards[0].targt: unknown key (expected one of name, target, backend, "
            "transport, fallback, tags, adapter, python, workdir, power, timeouts, "
            "adapter_options, runtimes); did you mean 'target'?",
        ),
        (
            "boards:\n  - {name: a, target: rk3588, backend: hardware}\n",
            'farm.yaml:2:40: boards[0].backend: expected one of hw, sim, got "hardware"',
        ),
        (
            "boards:\n  - {name: a, target: rk3588, tags: rack-a}\n",
            'farm.yaml:2:37: boards[0].tags: expected a list of strings, got "rack-a"',
        ),
        (
            "boards:\n  - {name: a, target: rk3588, transport: {kind: serial, port: /dev/ttyS0, "
            "baudrate: fast}}\n",
            'farm.yaml:2:85: boards[0].transport.baudrate: expected an integer, got "fast"',
        ),
        (
            "boards:\n  - {name: Board_1, target: rk3588}\n",
            "farm.yaml:2:12: boards[0].name: expected a name of [a-z0-9._-] characters, "
            'got "Board_1"',
        ),
        (
            "defaults:\n  timeouts: {run: -1}\nboards: []\n",
            "farm.yaml:2:19: defaults.timeouts.run: "
            "expected a number of seconds in (0, 86400] (at most 24 h), got -1",
        ),
        (
            "boards:\n  - {name: a, target: rk3588}\n  - {name: a, target: rk3566}\n",
            "farm.yaml:3:12: boards[1].name: duplicate board name 'a' (also boards[0])",
        ),
        ("boards: {}\n", "farm.yaml:1:9: boards: expected a list of boards, got a mapping"),
        ("", "farm.yaml:1:1: expected a mapping with boards, got an empty file"),
        (
            "bords: []\n",
            "farm.yaml:1:1: bords: unknown key (expected one of defaults, boards, "
            "manifest, labgrid); did you mean 'boards'?",
        ),
    ],
    ids=[
        "password",
        "key",
        "unknown-key",
        "backend",
        "tags",
        "baudrate",
        "name",
        "timeout",
        "duplicate",
        "boards-type",
        "empty",
        "top-level",
    ],
)
def test_errors_name_line_column_and_key_path(tmp_path: Path, text: str, message: str) -> None:
    assert error_of(tmp_path, text) == message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("boards:\n  - {name: a, target: rk3598}\n", "got \"rk3598\" (did you mean 'rk3588'?)"),
        ("boards:\n  - {name: a}\n", "boards[0]: expected a target"),
        ("boards:\n  - {name: a, target: rk3588, transport: {kind: ssh}}\n", "expected a host"),
        (
            "boards:\n  - {name: a, target: rk3588,\n"
            "     transport: {kind: ssh, host: h, baudrate: 9}}\n",
            "boards[0].transport.baudrate: unknown key",
        ),
        (
            "boards:\n  - {name: a, target: rk3588, power: {command: {on: x}}}\n",
            "boards[0].power.command: expected cycle, or both on and off",
        ),
        (
            "boards:\n  - {name: a, target: rk3588,\n"
            "     transport: {kind: ssh, host: h, port: 70000}}\n",
            "expected an integer in [1, 65535], got 70000",
        ),
        ("boards: [\n", "farm.yaml:2:1: not valid YAML"),
        (
            "boards:\n  - {name: a, target: rk3588, transport: ssh}\n",
            "farm.yaml:2:42: boards[0].transport: expected {kind: ssh, host: ...}, got 'ssh'",
        ),
        (
            "boards:\n  - {name: a, target: rk3588, transport: telnet}\n",
            'boards[0].transport: expected one of local, ssh, serial, got "telnet"',
        ),
    ],
)
def test_more_errors(tmp_path: Path, text: str, fragment: str) -> None:
    assert fragment in error_of(tmp_path, text)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(
        InventoryError, match=r"nope\.yaml: expected an inventory file, no such file"
    ):
        load_inventory(tmp_path / "nope.yaml")


def test_parse_without_a_file() -> None:
    inventory = parse_inventory("boards:\n  - {name: x, target: kl730}\n", source="inline")
    assert inventory.boards[0].simulated and inventory.source == "inline"
    with pytest.raises(InventoryError, match="inline: no board 'y'"):
        inventory.board("y")


def test_ssh_key_files_are_relative_to_the_inventory(tmp_path: Path) -> None:
    """A farm's inventory travels with its keys: relative paths start at the file, ``~`` at
    home; the host key policy is strict unless the file says accept-new."""
    text = (
        "boards:\n"
        "  - name: a\n    target: rk3588\n"
        "    transport: {kind: ssh, host: h, key_file: keys/id, known_hosts: keys/known,"
        " host_key_policy: accept-new}\n"
        "  - name: b\n    target: rk3588\n"
        "    transport: {kind: ssh, host: h, key_file: ~/.ssh/farm}\n"
    )
    a, b = load_inventory(write(tmp_path, text)).boards
    assert a.transport.key_file == str((tmp_path / "keys" / "id").resolve())
    assert a.transport.known_hosts == str((tmp_path / "keys" / "known").resolve())
    assert a.transport.host_key_policy == "accept-new"
    assert b.transport.key_file == str(Path("~/.ssh/farm").expanduser())
    assert (b.transport.known_hosts, b.transport.host_key_policy) == (None, "strict")


def test_an_unknown_host_key_policy_is_refused(tmp_path: Path) -> None:
    text = (
        "boards:\n  - {name: a, target: rk3588,\n"
        "     transport: {kind: ssh, host: h, host_key_policy: yes-please}}\n"
    )
    with pytest.raises(InventoryError, match=r"boards\[0\]\.transport\.host_key_policy: .*strict"):
        load_inventory(write(tmp_path, text))
