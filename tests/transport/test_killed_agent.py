"""An agent killed on the board mid-job is reported with the signal that killed it, as an
infrastructure error (AgentKilledError, a TransportError), over every transport: a local
subprocess, a real sshd on 127.0.0.1 and a shell on a pseudo-terminal."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.errors import AgentKilledError, TransportError
from npu_hil.harness.transport import LocalTransport, Transport
from npu_hil.harness.transport.serial_console import SerialTransport
from npu_hil.harness.transport.ssh import SshTransport
from tests.agent.jobs import FAKE_ADAPTERS, X, echo_job
from tests.transport.conftest import SerialBoard, Sshd

PY = sys.executable


@contextmanager
def _local(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Transport]:
    yield LocalTransport(tmp_path / "board", python=PY)


@contextmanager
def _ssh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Transport]:
    sshd: Sshd = request.getfixturevalue("sshd")
    known = tmp_path / "known_hosts"
    known.write_text(sshd.known_hosts_line())
    with SshTransport(
        "127.0.0.1", sshd.port, sshd.user, workdir=str(tmp_path / "board"),
        key_file=sshd.client_key, known_hosts=known, user_known_hosts=None, python=PY,
    ) as transport:  # fmt: skip
        yield transport


@contextmanager
def _serial(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Transport]:
    board: SerialBoard = request.getfixturevalue("serial_board")
    with SerialTransport(
        str(board.tty), workdir=str(tmp_path / "remote"), python=PY, command_timeout=20.0,
        connect_timeout=10.0,
    ) as transport:  # fmt: skip
        yield transport


TRANSPORTS: dict[str, Callable[[pytest.FixtureRequest, Path], AbstractContextManager[Transport]]]
TRANSPORTS = {"local": _local, "ssh": _ssh, "serial": _serial}


@pytest.mark.parametrize("kind", sorted(TRANSPORTS))
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_agent_is_reported_by_its_signal(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, signum: signal.Signals
) -> None:
    model = tmp_path / "echo.bin"
    model.write_bytes(b"model" * 50)
    hang = echo_job(model, "victim", adapter_options={"hang": {"stage": "run", "seconds": 60}})
    with (
        TRANSPORTS[kind](request, tmp_path) as transport,
        AgentClient(
            transport, adapter_dirs=[FAKE_ADAPTERS], margin_s=5.0, scratch=tmp_path / "scratch"
        ) as client,
    ):
        client.ping()
        pid = client.agent_pid
        assert pid is not None
        # The board's agent dies under a running job, as the OOM killer or an operator does it.
        killer = threading.Timer(1.5, os.kill, (pid, signum))
        killer.start()
        started = time.monotonic()
        with pytest.raises(AgentKilledError) as caught:
            client.submit(hang, {"x": X})
        killer.join()
        assert time.monotonic() - started < 30
        error = caught.value
        assert isinstance(error, TransportError)  # infrastructure: an error, retried
        assert (error.signal, error.signal_name) == (signum, signum.name)
        assert f"killed by {signum.name}" in error.message
        assert "SIGHUP" not in error.message
        # The next job gets a new agent.
        assert client.submit(echo_job(model, "after"), {"x": X}).ok
