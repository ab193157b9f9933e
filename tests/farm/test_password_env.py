"""``password_env`` names a variable, never holds the password: a value that is not a variable's
name (in capitals, as environment variables are named) is refused, and the refusal never shows
the value, which may be the secret itself."""

from __future__ import annotations

import pytest

from npu_hil.harness.farm.inventory import InventoryError, parse_inventory

TEMPLATE = """\
boards:
  - name: b-01
    target: rk3588
    transport: {{kind: serial, port: /dev/ttyUSB0, password_env: {value}}}
"""


@pytest.mark.parametrize("value", ["hunter2", '"S3cr3t!pass"', "Passw0rd", "'p a s s'", "x" * 200])
def test_a_password_written_there_is_refused_unseen(value: str) -> None:
    with pytest.raises(InventoryError) as caught:
        parse_inventory(TEMPLATE.format(value=value), source="farm.yaml")
    message = str(caught.value)
    assert "password_env: expected the name of an environment variable" in message
    assert value.strip("\"'") not in message and "not shown" in message


@pytest.mark.parametrize("value", ["FARM_CONSOLE_PASSWORD", "RDK_PASSWORD", "_P1"])
def test_a_variable_name_is_taken(value: str) -> None:
    inventory = parse_inventory(TEMPLATE.format(value=value), source="farm.yaml")
    assert inventory.boards[0].transport.password_env == value
