"""The typed transport configurations: one class per kind, each default and each check in one
place (npu_hil.harness.transport.defaults), whoever builds the configuration: the inventory, labgrid
or a script."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from npu_hil.harness.errors import TransportError
from npu_hil.harness.farm import Board, InventoryError, parse_inventory
from npu_hil.harness.farm.inventory import LocalEntry, SerialEntry, SshEntry
from npu_hil.harness.farm.session import connect
from npu_hil.harness.transport import LocalTransport
from npu_hil.harness.transport.config import (
    CONFIGS,
    KINDS,
    LocalConfig,
    SerialConfig,
    SshConfig,
)
from npu_hil.harness.transport.defaults import (
    BAUDRATE,
    BOARD_PYTHON,
    HOST_KEY_POLICIES,
    SSH_PORT,
    check_host_key_policy,
)
from npu_hil.harness.transport.ssh import SshTransport


def test_one_class_per_kind_and_the_keys_an_inventory_may_give() -> None:
    assert KINDS == ("local", "ssh", "serial")
    assert [CONFIGS[k] for k in KINDS] == [LocalConfig, SshConfig, SerialConfig]
    assert all(CONFIGS[k].kind == k for k in KINDS)
    # The inventory's entry of each kind takes exactly its configuration's keys and ``kind``.
    entries = {"local": LocalEntry, "ssh": SshEntry, "serial": SerialEntry}
    for kind, entry in entries.items():
        assert set(entry.model_fields) == {"kind", *(f.name for f in fields(CONFIGS[kind]))}
    assert set(LocalEntry.model_fields) == {"kind"}
    assert set(SshEntry.model_fields) == {
        "kind",
        "host",
        "port",
        "user",
        "key_file",
        "host_key_policy",
        "known_hosts",
    }
    assert set(SerialEntry.model_fields) == {"kind", "port", "baudrate", "user", "password_env"}


def test_defaults_are_the_same_wherever_a_configuration_comes_from() -> None:
    assert (SshConfig().port, SshConfig().host_key_policy) == (SSH_PORT, "strict") == (22, "strict")
    assert SerialConfig().baudrate == BAUDRATE == 115200
    inventory = parse_inventory(
        "boards:\n"
        "  - {name: a, target: rk3588, transport: {kind: ssh, host: h}}\n"
        "  - {name: b, target: rk3588, transport: {kind: serial, port: /dev/ttyUSB0}}\n"
    )
    assert inventory.board("a").transport == SshConfig(host="h")
    assert inventory.board("b").transport == SerialConfig(port="/dev/ttyUSB0")
    assert SshTransport("h", workdir="/w").port == SSH_PORT
    assert SshTransport("h", workdir="/w").python == BOARD_PYTHON == "python3"


def test_configurations_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SshConfig(host="h").host = "other"  # type: ignore[misc]


def test_the_host_key_policy_is_checked_by_one_function_for_everyone(tmp_path: Path) -> None:
    assert [check_host_key_policy(p) for p in HOST_KEY_POLICIES] == ["strict", "accept-new"]
    with pytest.raises(ValueError, match=r"host_key_policy: expected one of strict, accept-new"):
        SshConfig(host="h", host_key_policy="stict")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"did you mean 'strict'\?"):
        SshTransport("h", workdir="/w", host_key_policy="stict")  # type: ignore[arg-type]
    with pytest.raises(InventoryError) as caught:
        parse_inventory(
            "boards:\n"
            "  - {name: a, target: rk3588,\n"
            "     transport: {kind: ssh, host: h, host_key_policy: stict}}\n",
            source="farm.yaml",
        )
    assert caught.value.message.startswith(
        "farm.yaml:3:55: boards[0].transport.host_key_policy: "
        'expected one of strict, accept-new, got "stict"'
    )
    assert "did you mean 'strict'?" in caught.value.message


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: SshConfig(host="h", port=0), r"ssh port 0: expected an integer in \[1, 65535\]"),
        (lambda: SshConfig(host="h", port="22"), "ssh port '22': expected an integer"),
        (lambda: SerialConfig(port="/dev/x", baudrate=0), "baudrate 0: expected a positive"),
        (lambda: SerialConfig(port="/dev/x", baudrate=True), "baudrate True: expected an int"),
    ],
)
def test_a_configuration_refuses_what_no_transport_could_use(build: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()  # type: ignore[operator]


def test_a_local_configuration_opens_a_local_transport(tmp_path: Path) -> None:
    opened = LocalConfig().open(workdir=tmp_path / "w", python=sys.executable, connect_timeout=1)
    assert isinstance(opened, LocalTransport) and opened.python == sys.executable


def test_a_remote_board_without_an_address_is_a_transport_error_naming_it(tmp_path: Path) -> None:
    for config in (SshConfig(), SerialConfig()):
        board = Board("lab-01", "rk3588", "hw", config, "none", "rknn_native")
        with pytest.raises(TransportError, match=r"^lab-01: an? \w+ transport without a"):
            connect(board, tmp_path)
