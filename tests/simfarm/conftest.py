"""Fixtures for the simulated farm's tests: real sshd, socat and ser2net processes on 127.0.0.1.
A program that is not installed here skips the tests that need it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from npu_hil.harness.farm.inventory import Board
from npu_hil.harness.transport.serial_console import SerialTransport
from npu_hil.harness.transport.ssh import SshTransport
from npu_hil_testkit.simfarm import FarmState, MissingToolError, down, up

# Two targets of different vendors, two boards each per transport: enough to see that boards
# share one sshd but not a workdir, and each serial board has its own console.
TARGETS = ("rk3588", "kl730")


def start_farm(folder: Path, **options: object) -> FarmState:
    try:
        return up(folder, **options)  # type: ignore[arg-type]
    except MissingToolError as exc:
        pytest.skip(exc.message)


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FarmState]:
    """One farm per module: SSH and pty serial boards."""
    state = start_farm(
        tmp_path_factory.mktemp("farm"),
        targets=TARGETS,
        boards=2,
        transports=("ssh", "serial"),
    )
    try:
        yield state
    finally:
        down(state.dir)


def gone(pid: int) -> bool:
    """No such process any more (a zombie waiting for a parent that never reaps counts as gone:
    it runs nothing and holds no port)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] in "ZX"


def ssh_transport(board: Board, **options: object) -> SshTransport:
    """The board's SSH transport exactly as its inventory entry describes it."""
    config = board.transport
    assert config.kind == "ssh" and config.host and isinstance(config.port, int)
    assert board.workdir and board.python
    settings: dict[str, object] = {"connect_timeout": 5.0, **options}
    return SshTransport(
        config.host,
        config.port,
        config.user,
        workdir=board.workdir,
        python=board.python,
        key_file=config.key_file,
        known_hosts=config.known_hosts,
        host_key_policy="strict",
        user_known_hosts=None,  # only the farm's own known_hosts may vouch for its host key
        **settings,  # type: ignore[arg-type]
    )


def serial_transport(board: Board, **options: object) -> SerialTransport:
    config = board.transport
    assert config.kind == "serial" and isinstance(config.port, str)
    assert board.workdir and board.python
    settings: dict[str, object] = {"command_timeout": 10.0, "connect_timeout": 10.0, **options}
    return SerialTransport(
        config.port,
        workdir=board.workdir,
        baudrate=config.baudrate or 115200,
        python=board.python,
        **settings,  # type: ignore[arg-type]
    )


def of_kind(boards: Sequence[Board], kind: str) -> list[Board]:
    return [board for board in boards if board.transport.kind == kind]
