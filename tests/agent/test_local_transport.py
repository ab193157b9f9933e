"""LocalTransport's own behaviour, and the one-shot agent path through it. What every transport
does (commands, files, confinement, streams) is held by the contract suite
(tests/transport/contract)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path, PurePosixPath

import numpy as np
import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.agent.protocol import InputSpec, JobSpec
from npu_hil.harness.errors import DeviceError, NpuHilError, TransportError
from npu_hil.harness.transport import (
    LocalTransport,
    RemotePathError,
    Stream,
)
from tests.agent.jobs import FAKE_ADAPTERS

PY = sys.executable


@pytest.fixture
def transport(tmp_path: Path) -> LocalTransport:
    return LocalTransport(tmp_path / "board", python=PY)


# --- files ---------------------------------------------------------------------------------------


def test_symlinks_cannot_lead_out(transport: LocalTransport, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, Path(transport.workdir) / "escape")
    source = tmp_path / "f"
    source.write_bytes(b"x")
    with pytest.raises(RemotePathError, match="via a symlink"):
        transport.put(source, "escape/f")
    with pytest.raises(RemotePathError, match="via a symlink"):
        transport.cleanup("escape")
    assert outside.is_dir() and not (outside / "f").exists()


# --- processes -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_run_timeout_kills_the_whole_group(transport: LocalTransport, tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    grandchild = tmp_path / "grandchild.py"
    grandchild.write_text(f"import time\ntime.sleep(3)\nopen({str(marker)!r}, 'w').close()\n")
    # The child starts a grandchild that holds the pipes and would leave the marker if it
    # survived, then hangs.
    script = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, {str(grandchild)!r}])\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    with pytest.raises(TransportError, match=r"no exit within 0\.5 s; killed"):
        transport.run([PY, "-c", script], timeout=0.5)
    assert time.monotonic() - started < 10
    time.sleep(3.5)
    assert not marker.exists()


def test_run_missing_program(transport: LocalTransport) -> None:
    with pytest.raises(TransportError, match="cannot start"):
        transport.run(["/nonexistent/python"], timeout=5)


@pytest.mark.slow
def test_session_stream(transport: LocalTransport) -> None:
    script = (
        "import os, sys\n"
        "sys.stderr.write('hello on stderr\\n'); sys.stderr.flush()\n"
        "while True:\n"
        "    data = os.read(0, 100)\n"
        "    if not data: break\n"
        "    os.write(1, data[::-1])\n"
        "sys.exit(5)\n"
    )
    session = transport.open_stream([PY, "-c", script])
    assert isinstance(session, Stream)
    session.send(b"abc")
    received = b""
    while len(received) < 3:
        received += session.recv(10, timeout=10)
    assert received == b"cba"
    with pytest.raises(TransportError, match=r"nothing received within 0\.2 s"):
        session.recv(10, timeout=0.2)
    ended = session.close()
    assert ended.returncode == 5
    assert b"hello on stderr" in ended.stderr
    assert session.close() is ended  # idempotent
    assert session.recv(1, timeout=1) == b""
    with pytest.raises(TransportError, match="closed"):
        session.send(b"x")


@pytest.mark.slow
def test_session_eof_and_kill(transport: LocalTransport) -> None:
    session = transport.open_stream([PY, "-c", "import time; time.sleep(60)"])
    started = time.monotonic()
    ended = session.close(timeout=0.2)
    assert ended.returncode is not None and ended.returncode < 0  # killed
    assert time.monotonic() - started < 10

    quick = transport.open_stream([PY, "-c", "print('bye')"])
    received = b""
    while chunk := quick.recv(100, timeout=10):  # b"" is the end of the stream
        received += chunk
    assert received == b"bye\n"
    assert quick.close().returncode == 0


def test_environment_is_passed(tmp_path: Path) -> None:
    transport = LocalTransport(tmp_path, python=PY, env={"NPU_HIL_PROBE": "42"})
    done = transport.run([PY, "-c", "import os; print(os.environ['NPU_HIL_PROBE'])"], timeout=30)
    assert done.stdout == b"42\n"


# --- the agent through LocalTransport, one process per job ---------------------------------------


class CountingTransport(LocalTransport):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.puts: list[str] = []

    def put(self, local_path: str | Path, remote_path: str | PurePosixPath) -> None:
        self.puts.append(str(remote_path))
        super().put(local_path, remote_path)


def job(model: Path, job_id: str = "one", **options: object) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        adapter="echo",
        model=model,
        inputs=(InputSpec("x", "NHWC", (1, 4, 4, 3), "uint8"),),
        adapter_options=options,
        load_timeout_s=10,
        run_timeout_s=10,
    )


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "net.rknn"
    path.write_bytes(b"\x01\x02" * 500)
    return path


@pytest.mark.slow
def test_one_shot_jobs(tmp_path: Path, model: Path) -> None:
    transport = CountingTransport(tmp_path / "board", python=PY)
    x = np.arange(48, dtype=np.uint8).reshape(1, 4, 4, 3)
    with AgentClient(transport, resident=False, adapter_dirs=[FAKE_ADAPTERS]) as client:
        first = client.submit(job(model), {"x": x})
        second = client.submit(job(model, "two"), {"x": x})
    assert first.ok and second.ok
    assert first.output("x_out").data.tobytes() == x.tobytes()
    # One process per job: nothing is cached between them.
    assert not second.timings.model_cached
    assert second.output("x_out").attributes["loads"] == 1
    # The model went to the cache once, in the agent's stream (no file copy); a job leaves no
    # folder on the board.
    assert client.model_bytes_sent == model.stat().st_size
    assert not any(p.startswith("cache/") for p in transport.puts)
    assert list((Path(transport.workdir) / "jobs").glob("*")) == []


@pytest.mark.slow
def test_one_shot_ping_and_versions(tmp_path: Path) -> None:
    """Without a resident agent (a serial console) ping and versions are one-shot agent runs
    and answer the same as a session does; no process stays behind."""
    transport = LocalTransport(tmp_path / "board", python=PY)
    with AgentClient(transport, resident=False, adapter_dirs=[FAKE_ADAPTERS]) as client:
        ping = client.ping()
        assert ping["op"] == "ping" and ping["jobs"] == 0 and ping["pid"] != os.getpid()
        assert client.hello["op"] == "hello" and "echo" in client.hello["adapters"]
        versions = client.versions("echo")
        assert versions["python"].startswith("3.") and "numpy" in versions
        with pytest.raises(NpuHilError, match="not an adapter name"):
            client.versions("../echo")
        assert client.agents_started == 0


def test_redeploy_copies_nothing_new(tmp_path: Path, model: Path) -> None:
    transport = CountingTransport(tmp_path / "board", python=PY)
    client = AgentClient(transport, resident=False, adapter_dirs=[FAKE_ADAPTERS])
    agent = client.deploy()
    client.deploy_model(model)
    assert {
        "npu_hil_board/__main__.py",
        "npu_hil_board/relay.py",
        "npu_hil_board/adapters/base.py",
        "adapters/echo.py",
        "adapters/sim.py",
        ".complete",
    } <= {
        str(PurePosixPath(p).relative_to(agent.parent))
        for p in transport.puts
        if p.startswith(str(agent.parent))
    }
    assert not any(p.startswith("cache/") for p in transport.puts)
    assert client.model_bytes_sent == model.stat().st_size
    client.close()
    transport.puts.clear()
    again = AgentClient(transport, resident=False, adapter_dirs=[FAKE_ADAPTERS])
    assert again.deploy() == agent
    again.deploy_model(model)
    assert transport.puts == [] and again.model_bytes_sent == 0
    again.close()


@pytest.mark.slow
def test_one_shot_crash_is_a_device_error(tmp_path: Path, model: Path) -> None:
    transport = LocalTransport(tmp_path / "board", python=PY)
    x = np.zeros((1, 4, 4, 3), np.uint8)
    with AgentClient(transport, resident=False, adapter_dirs=[FAKE_ADAPTERS]) as client:
        with pytest.raises(
            DeviceError, match=r"ended before answering \(killed by SIGABRT\)"
        ) as crash:
            client.submit(job(model, crash={"stage": "run", "how": "abort"}), {"x": x})
        # The agent's fault handler shows where the runtime died.
        assert "in _misbehave" in str(crash.value)
        assert client.submit(job(model), {"x": x}).ok


@pytest.mark.slow
def test_one_shot_timeout_is_reported(tmp_path: Path, model: Path) -> None:
    transport = LocalTransport(tmp_path / "board", python=PY)
    x = np.zeros((1, 4, 4, 3), np.uint8)
    spec = job(model, hang={"stage": "load", "seconds": 60})
    spec = JobSpec(**{**spec.__dict__, "load_timeout_s": 0.5})
    with AgentClient(transport, resident=False, adapter_dirs=[FAKE_ADAPTERS]) as client:
        started = time.monotonic()
        result = client.submit(spec, {"x": x})
        assert time.monotonic() - started < 20
    (error,) = result.errors
    assert (error.type, error.stage) == ("TimeoutError", "load")
    assert isinstance(result.error(), TransportError)


class OldNamedTransport:
    """A transport written before ``open_session`` was named ``open_stream``: everything of a
    LocalTransport but that name."""

    def __init__(self, inner: LocalTransport) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        if name == "open_stream":
            raise AttributeError(name)
        if name == "open_session":
            return self._inner.open_stream
        return getattr(self._inner, name)


@pytest.mark.slow
def test_old_spellings_still_work_with_a_deprecation_warning(tmp_path: Path, model: Path) -> None:
    """``AgentClient(sessions=...)`` and a transport's ``open_session`` still work this release,
    each with a DeprecationWarning naming the new spelling."""
    x = np.arange(48, dtype=np.uint8).reshape(1, 4, 4, 3)
    with pytest.warns(DeprecationWarning, match="resident="):
        one_shot = AgentClient(
            LocalTransport(tmp_path / "a", python=PY), sessions=False, adapter_dirs=[FAKE_ADAPTERS]
        )
    assert one_shot.resident is False
    with one_shot:
        assert one_shot.submit(job(model), {"x": x}).ok
    assert one_shot.agents_started == 0
    old = OldNamedTransport(LocalTransport(tmp_path / "b", python=PY))
    with AgentClient(old, adapter_dirs=[FAKE_ADAPTERS]) as client:  # type: ignore[arg-type]
        with pytest.warns(
            DeprecationWarning, match="open_session is deprecated; name it open_stream"
        ):
            assert client.submit(job(model), {"x": x}).ok
        assert client.agents_started == 1
