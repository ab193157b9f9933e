"""The serial transport works with whichever ``serial`` package is installed: pyserial (the
harness's own dependency) or pyserial-labgrid (what the ``labgrid`` extra brings, which installs
the same ``serial`` package). CI runs this once without labgrid (tox ``py3``) and once with it
(tox ``labgrid``), so both providers are proven on a real console: a shell on a pty, served by
ser2net as RFC 2217 (with the ``ign_set_control`` option the transport adds) and as raw TCP."""

from __future__ import annotations

import importlib.metadata
import inspect
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from npu_hil.harness.labgrid.serial_provider import CANDIDATES, serial_provider
from npu_hil.harness.transport.serial_console import SerialTransport, prepare_url
from npu_hil_testkit.simfarm import MissingToolError, SerialBoard, start_ser2net, stop_serial_board
from npu_hil_testkit.simfarm.console import require_ser2net, start_serial_board
from npu_hil_testkit.simfarm.procs import free_port, is_listening, spawn, stop_popen, wait_until

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e


def test_the_installed_serial_package_is_accounted_for(record_property: object) -> None:
    found = serial_provider()
    assert found.distribution in CANDIDATES, found
    assert found.installed and found.distribution in found.installed
    assert found.version == importlib.metadata.version(found.distribution)
    if len(found.installed) == 1:
        assert found.distribution == found.installed[0]
    # tox's labgrid environment installs the fork's files on purpose and says so here.
    expected = os.environ.get("NPU_HIL_EXPECT_SERIAL")
    if expected:
        assert found.distribution == expected, found
    import serial

    assert Path(serial.__file__).resolve() == found.path
    if callable(record_property):
        record_property("serial_provider", f"{found.distribution} {found.version}")


def test_the_rfc2217_client_knows_the_option_the_transport_adds() -> None:
    import serial.rfc2217

    source = inspect.getsource(serial.rfc2217)
    assert "ign_set_control" in source, f"{serial_provider()} lacks ign_set_control"
    assert prepare_url("rfc2217://h:1").endswith("?ign_set_control")


@pytest.fixture
def console(tmp_path: Path) -> Iterator[SerialBoard]:
    try:
        board = start_serial_board(tmp_path / "board")
    except MissingToolError as exc:
        pytest.skip(exc.message)
    yield board
    stop_serial_board(board.process)


def _roundtrip(url: str, workdir: Path) -> None:
    """A command and a binary file both ways: the transport's whole surface over this link."""
    blob = bytes(range(256)) * 8
    (workdir / "local").mkdir(parents=True)
    (workdir / "local" / "blob").write_bytes(blob)
    with SerialTransport(url, workdir=str(workdir / "board")) as link:
        done = link.run(["sh", "-c", "echo $((6*7))"], timeout=30)
        link.put(workdir / "local" / "blob", "blob")
        link.get("blob", workdir / "local" / "back")
    assert done.returncode == 0 and done.stdout == b"42\n"
    assert (workdir / "local" / "back").read_bytes() == blob


def test_rfc2217_console_with_the_installed_serial(console: SerialBoard, tmp_path: Path) -> None:
    try:
        served = start_ser2net(console.tty, tmp_path / "ser2net")
    except MissingToolError as exc:
        pytest.skip(exc.message)
    try:
        _roundtrip(served.url, tmp_path / "work")
    finally:
        stop_popen(served.process)


def test_raw_socket_console_with_the_installed_serial(console: SerialBoard, tmp_path: Path) -> None:
    try:
        ser2net = require_ser2net()
    except MissingToolError as exc:
        pytest.skip(exc.message)
    port = free_port()
    config = tmp_path / "raw.yaml"
    config.write_text(
        f"connection: &raw\n  accepter: tcp,127.0.0.1,{port}\n  enable: on\n"
        f"  connector: serialdev,{console.tty},115200n81,local\n",
        encoding="utf-8",
    )
    process = spawn(
        [ser2net, "-n", "-c", str(config), "-P", str(tmp_path / "pid")], log=tmp_path / "log"
    )
    try:
        wait_until(lambda: is_listening(port), process, timeout=10, what="ser2net")
        _roundtrip(f"socket://127.0.0.1:{port}", tmp_path / "work")
    finally:
        stop_popen(process)
