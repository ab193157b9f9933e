"""Hostile and careless inventories: every failure is an InventoryError at ``file:line:col``
saying what was expected and what came, never another exception and never a hang. One test per
root cause the fuzzing found, then the fuzz test itself (mutations from ``inventory_fuzz``)."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import inventory_fuzz
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_hil.harness.farm import InventoryError, load_inventory, parse_inventory

ROOT = Path(__file__).resolve().parents[2]
SSH = "boards:\n  - name: b\n    target: rk3588\n    transport: {{kind: ssh, host: h, {field}}}\n"
SERIAL = (
    "boards:\n  - {{name: b, target: rk3588,\n"
    "    transport: {{kind: serial, port: /dev/ttyS0, {field}}}}}\n"
)
TIMEOUT = "defaults:\n  timeouts: {{run: {value}}}\nboards:\n  - {{name: b, target: rk3588}}\n"
LABGRID = "labgrid:\n  coordinator: h\n  places: [a]\n  {field}\n"


def refused(text: str, base: Path | None = None) -> str:
    """The error's text after ``farm.yaml:``, its position checked."""
    with pytest.raises(InventoryError) as caught:
        parse_inventory(text, source="farm.yaml", base=base or Path("/nonexistent"))
    message = str(caught.value)
    assert re.match(r"farm\.yaml:\d+:\d+: ", message), message
    return message[len("farm.yaml:") :]


# --- numbers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "where", "why"),
    [
        (
            "port: !!int ''",
            "4:43: boards[0].transport.port",
            'expected an integer in [1, 65535], got ""',
        ),
        ("port: !!int 0x", "4:43: boards[0].transport.port", "plain decimal integer"),
        ("port: " + "9" * 4301, "4:43: boards[0].transport.port", "4301 digits is more than"),
        ("port: 1:30", "4:43: boards[0].transport.port", "base-60 number; write a plain integer"),
        ("port: 022", "4:43: boards[0].transport.port", "reads 022 as an octal number"),
    ],
    ids=["int-empty", "int-0x", "int-4301-digits", "sexagesimal", "octal"],
)
def test_integers_are_plain_decimals(field: str, where: str, why: str) -> None:
    message = refused(SSH.format(field=field))
    assert message.startswith(where + ": "), message
    assert why in message


def test_a_sexagesimal_port_says_to_quote_or_write_an_integer() -> None:
    message = refused(SSH.format(field="port: 1:30"))
    assert message == (
        "4:43: boards[0].transport.port: expected an integer in [1, 65535], got 1:30: "
        "YAML 1.1 reads 1:30 as a base-60 number; write a plain integer, or quote it if it is text"
    )


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("!!float x", "write a plain decimal number"),
        ("!!float ''", "write a plain decimal number"),
        (".inf", "expected a finite number"),
        ("-.inf", "expected a finite number"),
        (".nan", "expected a finite number"),
        ("1.0e+400", "expected a finite number"),
        ("1" + "0" * 400, "digits is more than any setting"),
        ("9" * 5000, "digits is more than any setting"),
        ("1:30", "base-60"),
        ("86401", "at most 24 h"),
        ("1.0e+300", "at most 24 h"),
        ("0", "at most 24 h"),
    ],
    ids=[
        "float-x",
        "float-empty",
        "inf",
        "minus-inf",
        "nan",
        "overflow",
        "400-digits",
        "5000-digits",
        "sexagesimal",
        "over-a-day",
        "1e300",
        "zero",
    ],
)
def test_timeouts_are_finite_positive_and_at_most_a_day(value: str, why: str) -> None:
    message = refused(TIMEOUT.format(value=value))
    assert message.startswith(
        "2:19: defaults.timeouts.run: expected a number of seconds in (0, 86400] (at most 24 h)"
    ), message
    assert why in message


def test_a_day_is_the_longest_timeout() -> None:
    board = parse_inventory(TIMEOUT.format(value="86400"), source="farm.yaml").boards[0]
    assert board.timeouts.run == 86400.0


@pytest.mark.parametrize("rate", ["9", "12345", "0", "99999999"])
def test_a_baud_rate_is_one_a_serial_port_takes(rate: str) -> None:
    message = refused(SERIAL.format(field=f"baudrate: {rate}"))
    assert "boards[0].transport.baudrate: expected a baud rate a serial port can be set to" in (
        message
    )


def test_the_usual_baud_rates_are_taken() -> None:
    for rate in (9600, 115200, 1500000):
        board = parse_inventory(SERIAL.format(field=f"baudrate: {rate}")).boards[0]
        assert board.transport.baudrate == rate


@pytest.mark.parametrize(
    ("field", "why"),
    [
        ("prio: !-1", "the YAML tag '!-1' is not taken"),
        ("prio: .inf", "expected a finite number"),
        ("prio: 1e400", 'expected a number in [-1e+06, 1e+06], got "1e400"'),
        ("prio: 10000000", "expected a number in [-1e+06, 1e+06], got 10000000"),
        ("wait: .inf", "expected a finite number"),
        ("wait: 100000", "expected a number in [0, 86400], got 100000"),
        ("wait: " + "9" * 4400, "digits is more than any setting"),
        ("refresh: !!float x", "write a plain decimal number"),
    ],
    ids=[
        "prio-tag",
        "prio-inf",
        "prio-text",
        "prio-huge",
        "wait-inf",
        "wait-huge",
        "wait-digits",
        "refresh-float-x",
    ],
)
def test_labgrid_numbers_are_finite_and_bounded(field: str, why: str) -> None:
    message = refused(LABGRID.format(field=field))
    assert message.startswith("4:"), message
    assert why in message


# --- tags, nesting, YAML text -------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "!foo bar",
        "!-1",
        "!!binary AAAA",
        "!!timestamp 2001-12-14",
        "!!set {a}",
        "!!python/object/apply:os.system [true]",
        "!<tag:example.com,2000:x> 1",
    ],
)
def test_unknown_tags_are_refused_at_their_node(value: str) -> None:
    message = refused(f"boards:\n  - name: {value}\n")
    assert message.startswith("2:11: the YAML tag "), message
    assert "is not taken: the inventory holds plain strings, numbers, lists and mappings" in message


def test_a_merge_key_is_refused() -> None:
    text = "defaults:\n  <<: {fallback: sim}\nboards: []\n"
    assert refused(text) == (
        "2:3: merge keys (<<) are not taken: write the keys out (or use an alias)"
    )


@pytest.mark.parametrize(
    "text",
    [
        "boards: " + "[" * 500 + "]" * 500 + "\n",
        "boards: " + "{a: " * 500 + "b" + "}" * 500 + "\n",
        "boards:\n" + "".join(f"{'  ' * (i + 1)}a:\n" for i in range(500)),
        "boards:\n" + "- " * 600 + "x\n",
    ],
    ids=["flow-lists", "flow-mappings", "block-mappings", "block-lists"],
)
def test_deep_nesting_is_refused_not_a_recursion_error(text: str) -> None:
    assert "nested more than 32 levels deep" in refused(text)


def test_a_nul_in_the_text_is_refused_with_its_line_and_column() -> None:
    message = refused("boards:\n  - name: a\x00b\n")
    assert message == "2:12: not valid YAML: the character U+0000 is not allowed in YAML text"


# --- text and paths -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "code"),
    [
        ('key_file: "/keys/a\\0b"', "U+0000"),
        ('key_file: "\\ud800"', "U+D800"),
        ('known_hosts: "\\udcff/known_hosts"', "U+DCFF"),
        ('user: "ro\\x1bot"', "U+001B"),
        ('key_file: "k\\u202e"', "U+202E"),
    ],
    ids=["nul", "surrogate", "low-surrogate", "escape", "bidi"],
)
def test_text_fields_refuse_nul_controls_and_lone_surrogates(field: str, code: str) -> None:
    message = refused(SSH.format(field=field))
    assert message.startswith("4:"), message
    assert "expected printable text, got " in message and f"{code} at character" in message
    message.encode("utf-8")  # the message itself is writable to any report
    assert not re.search(r"[\x00-\x1f\ud800-\udfff\u202e]", message)


@pytest.mark.parametrize("key", ["python", "workdir"])
def test_board_paths_refuse_nul(key: str) -> None:
    message = refused(f'boards:\n  - {{name: b, target: rk3588, {key}: "/x\\0"}}\n')
    assert f"boards[0].{key}: expected printable text" in message


def test_manifest_refuses_nul() -> None:
    message = refused('manifest: "m\\0.yaml"\nboards: []\n')
    assert message.startswith("1:11: manifest: expected printable text"), message


def test_tilde_followed_by_a_dot_names_no_user_and_says_what_was_meant() -> None:
    message = refused(SSH.format(field="key_file: ~.ssh/farm"))
    assert message == (
        "4:47: boards[0].transport.key_file: ~.ssh/farm: ~.ssh names no user of this machine "
        "(did you mean ~/.ssh/farm?)"
    )


def test_tilde_and_tilde_user_still_expand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/farm")
    board = parse_inventory(SSH.format(field="key_file: ~/.ssh/farm")).boards[0]
    assert board.transport.key_file == "/home/farm/.ssh/farm"
    root = parse_inventory(SSH.format(field="key_file: ~root/k")).boards[0]
    assert root.transport.key_file == str(Path(os.path.expanduser("~root/k")).resolve())


@pytest.mark.parametrize("field", ["key_file: loop/key", "known_hosts: loop"])
def test_a_symlink_loop_is_an_error_at_the_node(tmp_path: Path, field: str) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    message = refused(SSH.format(field=field), base=tmp_path)
    assert message.startswith("4:"), message
    assert "a loop of symbolic links" in message


def test_a_manifest_in_a_symlink_loop_is_an_error_at_the_node(tmp_path: Path) -> None:
    (tmp_path / "m").symlink_to(tmp_path / "m")
    message = refused("manifest: m/manifest.yaml\nboards: []\n", base=tmp_path)
    assert message.startswith("1:11: manifest: ") and "a loop of symbolic links" in message


def test_a_yaml_boolean_where_text_is_expected_says_to_quote_it() -> None:
    message = refused("boards:\n  - {name: b, target: rk3588, tags: [yes, on]}\n")
    assert message == (
        "2:38: boards[0].tags[0]: expected a non-empty string, got yes "
        "(YAML reads it as a boolean: quote it)"
    )


def test_values_in_errors_are_cut_short_and_escaped() -> None:
    message = refused(SSH.format(field="port: !!str " + "x" * 5000))
    assert len(message) < 300, message
    assert "... (5000 characters)" in message


# --- secrets under tags -------------------------------------------------------------------------

PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)


def test_key_material_under_a_binary_tag_is_refused_as_a_secret() -> None:
    encoded = base64.b64encode(PEM.encode()).decode()
    lines = " ".join(textwrap.wrap(encoded, 60))  # short lines: no long base64 run to spot
    message = refused(SSH.format(field=f'key_file: !!binary "{lines}"'))
    assert message.startswith("4:47: boards[0].transport.key_file: holds key material"), message
    assert encoded[:20] not in message


def test_a_secret_key_under_a_binary_tag_is_refused() -> None:
    encoded = base64.b64encode(b"password").decode()
    message = refused(f"? !!binary {encoded}\n: hunter2\n")
    assert "secrets do not belong in the inventory; use password_env" in message
    assert "hunter2" not in message


@pytest.mark.parametrize("key", ["KEY", "Password", " key"])
def test_secret_keys_are_refused_whatever_their_case(key: str) -> None:
    message = refused(f'"{key}": x\n')
    assert "secrets do not belong in the inventory; use " in message
    assert "use use" not in message


def test_a_key_pasted_so_the_yaml_breaks_is_refused_as_a_secret() -> None:
    # Pasted unindented, the key's lines break the YAML; the error is about the key, not YAML.
    text = "boards:\n  - name: b\n    key_file: " + PEM.replace("\n", "\n:", 1)
    message = refused(text)
    assert message.startswith("3:1: holds key material; secrets do not belong"), message
    assert "b3BlbnNz" not in message


def test_an_inventory_over_a_mebibyte_is_refused() -> None:
    text = "boards: []\n" + "#" * (1 << 20) + "\n"
    assert refused(text).startswith("1:1: the inventory is 1048588 characters long (at most ")


# --- the file -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_fifo_as_the_inventory_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "farm.yaml"
    os.mkfifo(fifo)
    code = (
        "import sys\nfrom npu_hil.harness.farm import InventoryError, load_inventory\n"
        "try:\n    load_inventory(sys.argv[1])\nexcept InventoryError as e:\n    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(fifo)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.stdout.strip() == (
        f"{fifo}: expected an inventory file (a regular file), got a FIFO"
    )


def test_a_file_that_is_not_utf8_says_where(tmp_path: Path) -> None:
    path = tmp_path / "farm.yaml"
    path.write_bytes(b"boards:\n  - name: caf\xe9\n")
    with pytest.raises(InventoryError) as caught:
        load_inventory(path)
    assert str(caught.value) == f"{path}:2:14: not UTF-8 text (byte 0xe9)"


# --- the fuzz test ------------------------------------------------------------------------------


class DataChooser:
    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def below(self, n: int) -> int:
        return int(self.data.draw(st.integers(0, n - 1)))


# The default run is a bounded smoke (about ten seconds); HYPOTHESIS_PROFILE=thorough (passed
# through by tox) takes that profile's count.
EXAMPLES = (
    150
    if os.environ.get("HYPOTHESIS_PROFILE", "default") == "default"
    else settings.default.max_examples
)


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=5000)
@given(st.data())
def test_mutated_inventories_parse_or_fail_with_a_position(data: st.DataObject) -> None:
    label, text = inventory_fuzz.mutated(DataChooser(data))
    kind, detail = inventory_fuzz.outcome(text, Path("/nonexistent"))
    assert kind in ("ok", "typed"), f"{label}: {kind}: {detail}\n{text[:400]!r}"


def test_the_seeds_are_valid_inventories() -> None:
    for name, text in inventory_fuzz.seeds():
        kind, detail = inventory_fuzz.outcome(text, Path("/nonexistent"))
        assert kind == "ok", f"{name}: {detail}"


@pytest.mark.slow
def test_the_counting_script_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert inventory_fuzz.main(["--inputs", "60", "--seed", "7"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("inputs tried: 60 in ")
    assert re.search(r"untyped +0\n", out) and re.search(r"hang +0\n", out)
