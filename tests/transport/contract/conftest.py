"""The transports the contract suite holds to the Transport protocol, each started the way a
user reaches a board: a local subprocess, a real OpenSSH sshd on 127.0.0.1, and a shell on a
pseudo-terminal (socat), directly and served by ser2net as RFC 2217.

:func:`open_transport` opens one by kind; the ``transport`` fixture is every kind in turn.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from npu_hil.harness.transport import LocalTransport, Transport
from npu_hil.harness.transport.serial_console import SerialTransport
from npu_hil.harness.transport.ssh import SshTransport
from tests.transport.conftest import SerialBoard, Sshd

PY = sys.executable
KINDS = ("local", "ssh", "serial", "ser2net")
"""Every transport the contract runs on; ``ser2net`` is the serial transport over the network."""


@contextmanager
def open_transport(
    request: pytest.FixtureRequest, kind: str, workdir: Path, **options: object
) -> Iterator[Transport]:
    """A ``kind`` transport with ``workdir`` on the board (this machine), closed afterwards;
    ``options`` go to its constructor (e.g. ``readback_max`` for SSH). The fixtures it needs
    (``sshd``, ``serial_board``, ``ser2net_url``) are asked for only by the kinds that need
    them, so a missing sshd or socat skips those kinds alone."""
    if kind == "local":
        yield LocalTransport(workdir, python=PY)
        return
    if kind == "ssh":
        sshd: Sshd = request.getfixturevalue("sshd")
        known = request.getfixturevalue("tmp_path") / "known_hosts"
        known.write_text(sshd.known_hosts_line())
        settings: dict[str, object] = {
            "key_file": sshd.client_key,
            "known_hosts": known,
            "user_known_hosts": None,
            "python": PY,
            "connect_timeout": 5.0,
            "retries": 1,
            "backoff_s": 0.1,
            **options,
        }
        with SshTransport(
            "127.0.0.1",
            sshd.port,
            sshd.user,
            workdir=str(workdir),
            **settings,  # type: ignore[arg-type]
        ) as ssh:
            yield ssh
        return
    board: SerialBoard = request.getfixturevalue("serial_board")
    url = request.getfixturevalue("ser2net_url") if kind == "ser2net" else str(board.tty)
    settings = {"python": PY, "command_timeout": 20.0, "connect_timeout": 10.0, **options}
    with SerialTransport(url, workdir=str(workdir), **settings) as serial:  # type: ignore[arg-type]
        yield serial


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def transport(request: pytest.FixtureRequest, kind: str, tmp_path: Path) -> Iterator[Transport]:
    """An open transport of every kind in turn, its workdir ``tmp_path / "remote"`` (the serial
    board's own files live in ``tmp_path / "board"``)."""
    with open_transport(request, kind, tmp_path / "remote") as opened:
        yield opened
