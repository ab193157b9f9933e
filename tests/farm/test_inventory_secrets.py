"""No secret in an inventory, and none in a record: key material or a password in any field is
refused at load (``file:line:col``, the secret not repeated), and error text that reaches the
records, the JUnit XML, the HTML page or the summary is scrubbed of key material. The keys are
real ones, made by ``ssh-keygen`` for the test."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from npu_hil.harness.errors import TransportError
from npu_hil.harness.farm import InventoryError, load_inventory
from npu_hil.harness.redact import REDACTED, scrub
from npu_hil.harness.report.records import TestRecord
from npu_hil.harness.report.runs import append_record
from npu_hil.harness.report.writer import write_run


def keygen(tmp_path: Path, *options: str) -> str:
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed")
    path = tmp_path / f"key{len(list(tmp_path.glob('key*')))}"
    subprocess.run(
        ["ssh-keygen", "-q", "-N", "", "-f", str(path), *options], check=True, timeout=60
    )
    return path.read_text()


@pytest.fixture(params=["openssh-ed25519", "pem-rsa"])
def private_key(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "pem-rsa":
        return keygen(tmp_path, "-t", "rsa", "-b", "2048", "-m", "PEM")
    return keygen(tmp_path, "-t", "ed25519")


def body_lines(key: str) -> list[str]:
    """The lines of a key that are key bytes (not its BEGIN/END lines)."""
    return [line for line in key.splitlines() if line and not line.startswith("-----")]


def load_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "farm.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InventoryError) as caught:
        load_inventory(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:"), message
    return message[len(str(path)) + 1 :]


def indented(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())


@pytest.mark.slow
def test_a_key_pasted_into_key_file_is_refused_at_load(tmp_path: Path, private_key: str) -> None:
    text = (
        "boards:\n"
        "  - name: rk3588-01\n"
        "    target: rk3588\n"
        "    transport:\n"
        "      kind: ssh\n"
        "      host: 127.0.0.1\n"
        "      key_file: |\n" + indented(private_key, 8) + "\n"
    )
    message = load_error(tmp_path, text)
    assert message.startswith("7:17: boards[0].transport.key_file: holds key material"), message
    assert "key_file (the key's path)" in message
    for line in body_lines(private_key):
        assert line not in message


@pytest.mark.slow
def test_a_key_on_one_line_in_any_field_is_refused(tmp_path: Path, private_key: str) -> None:
    one_line = " ".join(private_key.split("\n"))
    text = f"boards:\n  - name: b\n    target: rk3588\n    python: '{one_line}'\n"
    message = load_error(tmp_path, text)
    assert message.startswith("4:13: boards[0].python: holds key material"), message


def test_a_password_in_a_url_is_refused(tmp_path: Path) -> None:
    text = (
        "boards:\n  - name: b\n    target: rk3588\n"
        "    transport: {kind: serial, port: 'rfc2217://lab:hunter2@10.0.0.9:4001'}\n"
    )
    message = load_error(tmp_path, text)
    assert "boards[0].transport.port: holds a password" in message
    assert "hunter2" not in message


@pytest.mark.parametrize("key", ["password", "token", "ssh_password", "api-key", "secret"])
def test_secret_keys_are_refused_anywhere_tag_keys_included(tmp_path: Path, key: str) -> None:
    text = (
        "labgrid:\n  coordinator: 127.0.0.1:20408\n"
        f"  places: [{{name: p, target: rk3588, tags: {{{key}: x}}}}]\n"
    )
    message = load_error(tmp_path, text)
    assert "secrets do not belong in the inventory" in message and f".{key}" in message


def test_ordinary_fields_are_not_taken_for_secrets(tmp_path: Path) -> None:
    path = tmp_path / "farm.yaml"
    path.write_text(
        "boards:\n  - name: rk3588-01\n    target: rk3588\n"
        "    transport: {kind: ssh, host: 127.0.0.1, key_file: ~/.ssh/farm_ed25519}\n"
        "    tags: [rack-a, ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz]\n"
        "    workdir: /data/npu-hil/Models/Rockchip/RK3588/builds/2026-12-01/nightly-01\n"
    )
    assert load_inventory(path).boards[0].name == "rk3588-01"


# --- error text on its way to records, reports and logs ------------------------------------------


def test_a_typed_error_never_carries_key_material(private_key: str) -> None:
    error = TransportError(f"ssh root@10.0.0.5: cannot read key file {private_key!r}: no such file")
    assert REDACTED in error.message and "no such file" in error.message
    for line in body_lines(private_key):
        assert line not in error.message and line not in str(error)


def test_reports_are_scrubbed_where_records_are_written(tmp_path: Path, private_key: str) -> None:
    """A message and a traceback quoting a key (as paramiko's connect error quoted the 'path')
    reach none of records.jsonl, junit.xml, report.html and summary.json."""
    sha = "ab" * 32
    leaked = TestRecord(
        nodeid="tests/hil/test_x.py::test_y[rk3588-01]",
        outcome="error",
        duration_s=0.1,
        board="rk3588-01",
        message=f"OSError: [Errno 2] No such file or directory: {private_key!r}",
        longrepr=f"Traceback...\n{private_key}\nOSError",
        artifact_hashes={"model": sha},
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    append_record(run_dir, leaked)
    write_run(run_dir, None, {})
    written = {p.name: p.read_text() for p in run_dir.iterdir() if p.is_file()}
    assert {"records.jsonl", "junit.xml", "report.html", "summary.json"} <= set(written)
    for name, text in written.items():
        for line in body_lines(private_key):
            assert line not in text, f"{name} holds key material"
    assert sha in written["records.jsonl"]  # a checksum is not a secret
    assert "No such file or directory" in written["records.jsonl"]


def test_scrub_leaves_ordinary_text_alone() -> None:
    for text in (
        "expected 12 bytes, got 13 at /tmp/pytest-of-root/pytest-3/test_a0/jobs/x-1a2b3c4d",
        "sha256 " + "0123456789abcdef" * 4,
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 is a public key type",
    ):
        assert scrub(text) == text
