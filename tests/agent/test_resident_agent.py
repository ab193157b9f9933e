"""The resident agent: model caching across jobs, timeouts, crashes, restarts, and the
frame stream itself."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from unittest.mock import ANY

import numpy as np
import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.board import wire as board
from npu_hil.harness.errors import DeviceError, ProtocolError, TransportError
from npu_hil.harness.transport import LocalTransport
from npu_hil.harness.transport.base import Stream, StreamExit
from tests.agent.jobs import FAKE_ADAPTERS, RawSession, X
from tests.agent.jobs import echo_job as spec

PY = sys.executable


def make_model(tmp_path: Path, name: str, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return make_model(tmp_path, "a.rknn", b"model A" * 100)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[AgentClient]:
    transport = LocalTransport(tmp_path / "board", python=PY)
    with AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS], margin_s=5.0) as agent_client:
        yield agent_client


def journal(path: Path) -> list[str]:
    return [line.split(" ", 1)[1][:12] for line in path.read_text().splitlines()]


# --- caching -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_models_are_cached_across_jobs(tmp_path: Path, model: Path) -> None:
    log = tmp_path / "journal.txt"
    transport = LocalTransport(tmp_path / "board", python=PY)
    client = AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS])
    first = client.submit(spec(model, "one", adapter_options={"journal": str(log)}), {"x": X})
    pid = client.agent_pid
    second = client.submit(spec(model, "two", adapter_options={"journal": str(log)}), {"x": X})
    assert first.ok and second.ok
    assert client.agent_pid == pid and client.agents_started == 1
    assert not first.timings.model_cached and first.output("x_out").attributes["loads"] == 1
    assert second.timings.model_cached and second.timings.load_s == 0.0
    # The second job did not call load again: same adapter instance, one load, two runs.
    attrs = second.output("x_out").attributes
    assert (attrs["loads"], attrs["runs"], attrs["instance"]) == (1, 2, 1)
    assert second.output("x_out").data.tobytes() == X.tobytes()
    assert client.ping()["models"] == [first.output("x_out").attributes["model_sha256"]]
    sha = attrs["model_sha256"][:12]
    assert journal(log) == ["init", f"load {sha}"[:12], f"run {sha}"[:12], f"run {sha}"[:12]]
    # Shutting down releases the cached model.
    client.close()
    assert journal(log)[-1] == f"release {sha}"[:12]


@pytest.mark.slow
def test_cache_is_lru_with_a_bound(tmp_path: Path) -> None:
    a = make_model(tmp_path, "a.bin", b"A" * 64)
    b = make_model(tmp_path, "b.bin", b"B" * 64)
    log = tmp_path / "journal.txt"
    transport = LocalTransport(tmp_path / "board", python=PY)
    opts = {"journal": str(log)}
    with AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS], model_cache_size=1) as client:
        cached = [
            client.submit(spec(m, f"j{i}", adapter_options=opts), {"x": X}).timings.model_cached
            for i, m in enumerate([a, a, b, a])
        ]
    assert cached == [False, True, False, False]
    steps = [line.split()[1] for line in log.read_text().splitlines()]
    # Loading B evicted (released) A; loading A again evicted B; shutdown released A.
    assert steps == [
        "init",
        "load",
        "run",
        "run",
        "load",
        "release",
        "run",
        "load",
        "release",
        "run",
        "release",
    ]


@pytest.mark.slow
def test_adapter_instances_are_per_options(client: AgentClient, model: Path) -> None:
    one = client.submit(spec(model, "a", adapter_options={"core_mask": 1}), {"x": X})
    two = client.submit(spec(model, "b", adapter_options={"core_mask": 2}), {"x": X})
    three = client.submit(spec(model, "c", adapter_options={"core_mask": 1}), {"x": X})
    instance = [r.output("x_out").attributes["instance"] for r in (one, two, three)]
    assert instance[0] == instance[2] != instance[1]
    assert [r.timings.model_cached for r in (one, two, three)] == [False, False, True]


@pytest.mark.slow
def test_one_process_serves_every_job(client: AgentClient, model: Path) -> None:
    client.submit(spec(model, "warm"), {"x": X})
    pid = client.agent_pid
    for i in range(20):
        assert client.submit(spec(model, f"n{i}"), {"x": X}).ok
    # No process start per job (Python + numpy cost ~100 ms each on a board).
    assert client.ping() == {
        "op": "ping",
        "pid": pid,
        "jobs": 21,
        "models": [ANY],
        "identity": ANY,
    }
    assert client.agents_started == 1


# --- failures and restarts -----------------------------------------------------------------------


@pytest.mark.slow
def test_timeout_is_reported_and_the_session_restarts(client: AgentClient, model: Path) -> None:
    assert client.submit(spec(model, "before"), {"x": X}).ok
    first_pid = client.agent_pid
    hung = spec(model, "hung", run_timeout_s=0.5, adapter_options={"hang": {"stage": "run"}})
    started = time.monotonic()
    result = client.submit(hung, {"x": X})
    assert time.monotonic() - started < 10
    (error,) = result.errors
    assert (error.type, error.stage) == ("TimeoutError", "run")
    assert "did not return from run within 0.5 s" in error.message
    assert isinstance(result.error(), TransportError)
    # The agent exited after reporting; the next job gets a new session.
    after = client.submit(spec(model, "after"), {"x": X})
    assert after.ok and not after.timings.model_cached
    assert client.agents_started == 2 and client.agent_pid not in (None, first_pid)


@pytest.mark.slow
def test_frozen_agent_is_killed_by_the_host(client: AgentClient, model: Path) -> None:
    client.deploy_model(model)
    pid = client.agent_pid
    assert pid is not None
    # A board that stops answering altogether (the agent's own watchdog cannot help here).
    os.kill(pid, signal.SIGSTOP)
    quick = spec(model, "frozen", load_timeout_s=0.2, run_timeout_s=0.2)
    started = time.monotonic()
    with pytest.raises(TransportError, match=r"job frozen: no answer from the agent within 6 s"):
        client.submit(quick, {"x": X})
    assert time.monotonic() - started < 15
    assert client.submit(spec(model, "next"), {"x": X}).ok
    assert client.agents_started == 2


def test_a_link_lost_early_is_not_called_a_timeout(
    client: AgentClient, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The message gives the time that passed, not the one allowed: an agent whose link is
    lost a moment into a job with minutes to run is not 'no answer within 600 s'."""
    client.ping()
    session = client._stream
    assert session is not None

    def lost(*args: object, **kwargs: object) -> bytes:
        raise TransportError("link lost")

    monkeypatch.setattr(session, "recv", lost)
    slow = spec(model, "long", load_timeout_s=300.0, run_timeout_s=300.0)
    with pytest.raises(TransportError) as raised:
        client.submit(slow, {"x": X})
    message = str(raised.value)
    assert "no answer from the agent after 0." in message and "s allowed" in message, message
    assert "within" not in message.split("(link lost)")[0], message


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "ending"),
    [("segv", "killed by SIGSEGV"), ("abort", "killed by SIGABRT"), ("exit", "exit status 70")],
)
def test_crashed_adapter(client: AgentClient, model: Path, how: str, ending: str) -> None:
    crash = spec(model, "boom", adapter_options={"crash": {"stage": "run", "how": how}})
    with pytest.raises(DeviceError, match=f"job boom: the agent died \\({ending}") as exc:
        client.submit(crash, {"x": X})
    assert "crashing on purpose in run" in str(exc.value)
    assert client.submit(spec(model, "alive"), {"x": X}).ok
    assert client.agents_started == 2


@pytest.mark.slow
def test_crash_while_loading(client: AgentClient, model: Path) -> None:
    with pytest.raises(DeviceError, match="the agent died"):
        client.submit(spec(model, "boom", adapter_options={"crash": {"stage": "load"}}), {"x": X})
    assert client.submit(spec(model, "alive"), {"x": X}).ok


@pytest.mark.slow
def test_adapter_errors_keep_the_session(client: AgentClient, model: Path) -> None:
    client.ping()
    pid = client.agent_pid
    fault = {"stage": "load", "kind": "DeviceError", "message": "rknn_init failed: -1"}
    result = client.submit(spec(model, "refused", adapter_options={"raise": fault}), {"x": X})
    assert not result.ok
    assert str(result.errors[0]) == "DeviceError during load: rknn_init failed: -1 (code 7)"
    with pytest.raises(DeviceError, match="job refused: DeviceError during load"):
        result.raise_for_errors()
    assert client.submit(spec(model, "fine"), {"x": X}).ok
    assert client.agent_pid == pid and client.agents_started == 1


@pytest.mark.slow
def test_stdout_noise_cannot_corrupt_the_stream(client: AgentClient, model: Path) -> None:
    for i in range(3):
        result = client.submit(spec(model, f"noisy{i}", adapter_options={"print": True}), {"x": X})
        assert result.ok
    assert client.agents_started == 1


@pytest.mark.slow
def test_refused_job_in_a_session(client: AgentClient, model: Path) -> None:
    result = client.submit(spec(model, "bad", adapter="nope"), {"x": X})
    assert not result.ok
    assert isinstance(result.error(), ProtocolError)
    assert "adapter: 'nope' is not an adapter on this board" in str(result.error())
    assert client.submit(spec(model, "good"), {"x": X}).ok


@pytest.mark.slow
def test_versions(client: AgentClient) -> None:
    versions = client.versions("echo")
    assert versions["runtime"] == "echo 1.0"
    assert versions["python"] == ".".join(map(str, sys.version_info[:3]))
    assert versions["numpy"] == np.__version__
    with pytest.raises(ProtocolError, match="'tensorrt' is not an adapter on this board"):
        client.versions("tensorrt")


def test_agent_that_cannot_start(tmp_path: Path, model: Path) -> None:
    transport = LocalTransport(tmp_path / "board", python="false")
    with (
        AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS]) as client,
        pytest.raises(DeviceError, match=r"did not start \(exit status 1\)"),
    ):
        client.submit(spec(model), {"x": X})


# --- damage on the way back ----------------------------------------------------------------------


class DamagingStream:
    """A session whose stream flips one bit on the way to the host: the last byte of the first
    run of ``signature`` it carries (found across reads, damaged in the read that completes it)."""

    def __init__(self, inner: Stream, signature: bytes) -> None:
        self.inner = inner
        self.signature = signature
        self.carried = bytearray()
        self.damaged = False

    def send(self, data: bytes) -> None:
        self.inner.send(data)

    def recv(self, n: int, timeout: float) -> bytes:
        chunk = self.inner.recv(n, timeout)
        if self.damaged or not chunk:
            return chunk
        before = len(self.carried)
        self.carried += chunk
        found = self.carried.find(self.signature, max(0, before - len(self.signature) + 1))
        if found < 0:
            return chunk
        self.damaged = True
        damaged = bytearray(chunk)
        damaged[found + len(self.signature) - 1 - before] ^= 0x01
        return bytes(damaged)

    def stderr_tail(self) -> bytes:
        return self.inner.stderr_tail()

    def close(self, timeout: float = 5.0) -> StreamExit:
        return self.inner.close(timeout)


class DamagingTransport(LocalTransport):
    """Sessions whose answers are damaged on the way (:class:`DamagingStream`)."""

    def __init__(self, workdir: Path, signature: bytes) -> None:
        super().__init__(workdir, python=PY)
        self.signature = signature
        self.streams: list[DamagingStream] = []

    def open_stream(self, argv: Sequence[str]) -> DamagingStream:  # type: ignore[override]
        session = DamagingStream(super().open_stream(argv), self.signature)
        self.streams.append(session)
        return session


@pytest.mark.slow
def test_a_buffer_damaged_in_the_stream_is_caught(tmp_path: Path, model: Path) -> None:
    """A bit flipped in the answer's bytes as the transport carries them (not in the host's
    copy afterwards): the buffer's sha256, computed as it arrives, is not the one the frame's
    trailer gives, and the job is a TransportError naming the buffer, never a result."""
    transport = DamagingTransport(tmp_path / "board", X.tobytes())
    with (
        AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS]) as client,
        pytest.raises(TransportError, match=r"\.bin: sha256 [0-9a-f]+, the agent wrote"),
    ):
        client.submit(spec(model), {"x": X})
    # The damage was in the answer's buffers (the echo's buffers hold X), nowhere else.
    assert [session.damaged for session in transport.streams] == [True]


# --- the frame stream, spoken directly -----------------------------------------------------------


@pytest.mark.slow
def test_raw_session_requests(tmp_path: Path) -> None:
    raw = RawSession(tmp_path)
    hello = raw.read()
    assert hello["op"] == "hello" and hello["protocol"] == board.AGENT_PROTOCOL
    assert hello["job_schema"] == board.JOB_SCHEMA and "echo" in hello["adapters"]
    raw.send({"op": "ping"})
    assert raw.read() == {
        "op": "ping",
        "pid": raw.process.pid,
        "jobs": 0,
        "models": [],
        "identity": ANY,
    }
    raw.send({"op": "dance"})
    assert raw.read()["error"]["message"] == "unknown op 'dance'"
    # A job request names no folder any more: without its document it is refused.
    raw.send({"op": "job", "dir": "jobs/nosuch"})
    assert raw.read() == {
        "op": "job",
        "error": {
            "type": "JobError",
            "stage": "validate",
            "message": "job: a job request carries its document in 'job'",
            "field": "job",
            "reason": "missing",
        },
    }
    raw.send({"op": "versions", "adapter": "../echo"})
    assert "is not an adapter name" in raw.read()["error"]["message"]
    raw.send({"op": "shutdown"})
    assert raw.read() == {"op": "shutdown"}
    returncode, rest, _ = raw.finish()
    assert returncode == 0 and rest == b""


@pytest.mark.slow
@pytest.mark.parametrize("resident", [True, False], ids=["resident", "one-shot"])
def test_a_damaged_cached_agent_is_found_and_replaced(
    tmp_path: Path, model: Path, resident: bool
) -> None:
    """The cache is trusted by name only after the board's own sha256 of every file agrees: a
    copy damaged on the board is replaced, once; one damaged again at once is a DeviceError."""
    transport = LocalTransport(tmp_path / "board", python=PY)
    with AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS]) as first:
        agent = Path(transport.workdir) / first.deploy()
    echo = agent.parent / "adapters" / "echo.py"
    pristine = echo.read_bytes()
    echo.write_bytes(pristine + b"\n# damaged on the board\n")
    with AgentClient(transport, resident=resident, adapter_dirs=[FAKE_ADAPTERS]) as again:
        assert again.ping()["op"] == "ping"
        assert again.repairs == 1 and echo.read_bytes() == pristine
        assert again.submit(spec(model, "after"), {"x": X}).ok

    class Tampering(LocalTransport):
        def put(self, local_path: str | os.PathLike[str], remote: str | PurePosixPath) -> None:
            super().put(local_path, remote)
            if str(remote).endswith("adapters/echo.py"):
                echo.write_bytes(b"# rewritten by something on the board\n")

    echo.write_bytes(b"# damaged\n")
    tampered = Tampering(tmp_path / "board", python=PY)
    client = AgentClient(tampered, resident=resident, adapter_dirs=[FAKE_ADAPTERS])
    with client, pytest.raises(DeviceError, match="damaged again after a fresh copy"):
        client.ping()


@pytest.mark.slow
def test_discard_is_an_unknown_op(tmp_path: Path) -> None:
    """The session no longer removes job folders for the host (no job has one): ``discard`` is
    answered as any unknown op, with a ProtocolError record, removes nothing, and the session
    goes on."""
    (tmp_path / "jobs" / "j1").mkdir(parents=True)
    (tmp_path / "jobs" / "j1" / "y.bin").write_bytes(b"y")
    raw = RawSession(tmp_path)
    raw.read()
    raw.send({"op": "discard", "dir": "jobs/j1"})
    assert raw.read() == {
        "op": "discard",
        "error": {"type": "ProtocolError", "stage": "request", "message": "unknown op 'discard'"},
    }
    assert (tmp_path / "jobs" / "j1" / "y.bin").read_bytes() == b"y"
    raw.send({"op": "ping"})
    assert raw.read()["pid"] == raw.process.pid
    raw.send({"op": "shutdown"})
    assert raw.read() == {"op": "shutdown"}
    assert raw.finish()[0] == 0


@pytest.mark.slow
def test_a_session_client_leaves_no_job_folders(client: AgentClient, model: Path) -> None:
    for job_id in ("one", "two"):
        assert client.submit(spec(model, job_id), {"x": X}).ok
    # Framed jobs: not one folder was made for them.
    assert client.agents_started == 1
    assert not (Path(client.transport.workdir) / "jobs").exists()


@pytest.mark.slow
def test_raw_session_ends_at_end_of_stream(tmp_path: Path) -> None:
    raw = RawSession(tmp_path)
    raw.read()
    assert raw.finish()[0] == 0  # stdin closed: a clean exit


@pytest.mark.slow
def test_desynchronised_stream_is_refused(tmp_path: Path) -> None:
    raw = RawSession(tmp_path)
    raw.read()
    raw.send_bytes(b"GET / HTTP/1.1\r\n\r\n")
    answer = raw.read()
    assert answer["op"] == "error" and "not npu-hil frames" in answer["error"]["message"]
    assert raw.finish()[0] == board.EXIT_FAILED


@pytest.mark.slow
def test_non_object_frame_is_refused(tmp_path: Path) -> None:
    raw = RawSession(tmp_path)
    raw.read()
    payload = json.dumps([1, 2]).encode()
    raw.send_bytes(len(payload).to_bytes(8, "big") + payload)
    assert "not a JSON object" in raw.read()["error"]["message"]
    # A whole frame that holds no request leaves the stream in step: the session goes on.
    raw.send({"op": "ping"})
    assert raw.read()["op"] == "ping"
    raw.send({"op": "shutdown"})
    raw.read()
    assert raw.finish()[0] == 0
