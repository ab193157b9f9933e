"""An agent killed on the board mid-job is reported with the signal that killed it, as an
infrastructure error (AgentKilledError, a TransportError), over every transport of the contract
(``kind``): a local subprocess, a real sshd on 127.0.0.1, a shell on a pseudo-terminal and the
same console through ser2net."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.errors import AgentKilledError, TransportError
from tests.agent.jobs import FAKE_ADAPTERS, X, echo_job
from tests.transport.contract.conftest import open_transport

# pyserial 3.5's rfc2217 client (the ser2net kind) still calls Thread.setDaemon/setName.
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore:set(Daemon|Name).. is deprecated:DeprecationWarning"),
]


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_agent_is_reported_by_its_signal(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, signum: signal.Signals
) -> None:
    model = tmp_path / "echo.bin"
    model.write_bytes(b"model" * 50)
    hang = echo_job(model, "victim", adapter_options={"hang": {"stage": "run", "seconds": 60}})
    with (
        open_transport(request, kind, tmp_path / "remote") as transport,
        AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS], margin_s=5.0) as client,
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
        assert (error.signal, signal.Signals(error.signal).name) == (signum, signum.name)
        assert f"killed by {signum.name}" in error.message
        assert "SIGHUP" not in error.message
        # The next job gets a new agent.
        assert client.submit(echo_job(model, "after"), {"x": X}).ok
