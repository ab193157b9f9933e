"""``password_env`` holding what cannot be a variable's name (a PIN YAML reads as a number, a
boolean, a phrase with spaces or symbols) is an inventory error that never shows the value, in
a board's transport and in the labgrid section alike: it is likely the password itself."""

from __future__ import annotations

import pytest

from npu_hil.harness.farm.inventory import InventoryError, parse_inventory

BOARD = """\
boards:
  - name: b-01
    target: rk3588
    transport: {{kind: serial, port: /dev/ttyUSB0, password_env: {value}}}
"""
LABGRID = """\
labgrid:
  coordinator: coord.lan
  places: [a-01]
  serial: {{user: root, password_env: {value}}}
"""
VALUES = {
    "pin": ("735911", "735911"),
    "pin-hex": ("0x7F3A", "0x7F3A"),
    "pin-octal": ("0o7531", "0o7531"),
    "float": ("12.5e3", "12.5e3"),
    "boolean": ("yes", "yes"),
    "symbols": ('"S3cr3t!pass"', "S3cr3t!pass"),
    "spaces": ("'correct horse battery'", "correct horse battery"),
    "tagged-str-pin": ("!!str 735911", "735911"),
}


@pytest.mark.parametrize("template", [BOARD, LABGRID], ids=["board", "labgrid"])
@pytest.mark.parametrize("written,secret", VALUES.values(), ids=list(VALUES))
def test_a_value_that_cannot_name_a_variable_is_refused_unseen(
    template: str, written: str, secret: str
) -> None:
    with pytest.raises(InventoryError) as caught:
        parse_inventory(template.format(value=written), source="farm.yaml")
    message = str(caught.value)
    assert "password_env: expected the name of an environment variable" in message, message
    assert secret not in message and "not shown" in message, message
    assert len(message.splitlines()) == 1


@pytest.mark.parametrize("template", [BOARD, LABGRID], ids=["board", "labgrid"])
def test_a_variable_name_is_taken(template: str) -> None:
    parsed = parse_inventory(template.format(value="FARM_CONSOLE_PASSWORD"), source="farm.yaml")
    config = parsed.boards[0].transport if template is BOARD else parsed.labgrid.serial  # type: ignore[union-attr]
    assert config.password_env == "FARM_CONSOLE_PASSWORD"  # type: ignore[union-attr]
