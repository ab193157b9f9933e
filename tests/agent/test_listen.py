"""The agent's listen mode (a resident agent on a Unix socket, one connection at a time) and the
relay that carries requests to it from a shell command, under this Python and, where it is found,
under Python 3.8 (``NPU_HIL_PY38``)."""

from __future__ import annotations

import hashlib
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from npu_hil.harness.agent.protocol import (
    BulkAnswer,
    InputSpec,
    JobSpec,
    ModelRef,
    bulk_request,
    frame_job,
    read_bulk,
    result_from_document,
)
from npu_hil.harness.board import relay
from npu_hil.harness.board import wire as board
from tests.agent.jobs import (
    BOARD_PACKAGE,
    FAKE_ADAPTERS,
    PY38,
    X,
    cache_model,
    py38_problem,
    read_frames,
)

AGENT = BOARD_PACKAGE
RELAY = Path(relay.__file__)
SOCKET = "agent.sock"


PYTHONS = [
    pytest.param(sys.executable, id="current"),
    pytest.param(
        PY38,
        id="py38",
        marks=pytest.mark.skipif(py38_problem() is not None, reason=py38_problem() or ""),
    ),
]


class Listener:
    """``agent.py --listen`` in a folder of its own (its model cache, ``--root .``), with its stderr
    in a file."""

    def __init__(self, python: str, folder: Path, *extra: str) -> None:
        self.python = python
        self.folder = folder
        self.log = folder / "agent.err"
        self.connections: list[Connection] = []
        with self.log.open("wb") as err:
            self.process = subprocess.Popen(
                [
                    python,
                    str(AGENT),
                    "--listen",
                    SOCKET,
                    "--adapters",
                    str(FAKE_ADAPTERS),
                    "--root",
                    ".",
                    *extra,
                ],
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
            )

    @property
    def socket(self) -> Path:
        return self.folder / SOCKET

    def wait_listening(self, timeout: float = 30.0) -> None:
        """Until a connection is accepted (a socket file alone may be a stale one)."""
        deadline = time.monotonic() + timeout
        while True:
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(str(self.socket))
                return
            except OSError:
                assert self.process.poll() is None, self.log.read_text()
                assert time.monotonic() < deadline, "the agent did not listen in time"
                time.sleep(0.02)
            finally:
                probe.close()

    def connect(self) -> Connection:
        """A new connection, closed by :meth:`stop` if the test has not closed it."""
        self.connections.append(connection := Connection(self.socket))
        return connection

    def wait(self, timeout: float = 30.0) -> int:
        return self.process.wait(timeout)

    def stop(self) -> None:
        for connection in self.connections:
            connection.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        assert self.process.stdout is not None
        self.process.stdout.close()


class Connection:
    """A client of the listening agent: frames sent, frames (plain or bulk) read back."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(str(path))
        self.stream = self.sock.makefile("rb")
        self.answer: BulkAnswer | None = None  # the buffers of the last frame read, if bulk

    def recv(self, n: int, timeout: float) -> bytes:
        """Up to ``n`` bytes (``b""`` at the end): the framed reader's receiver."""
        return self.stream.read(n)

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(board.encode_frame(message))

    def read(self) -> dict[str, Any] | None:
        """The next frame's message (None when the agent closed the connection); a bulk
        frame's buffers, read and hashed as they came, in :attr:`answer`."""
        header = self.stream.read(board.FRAME_HEADER.size)
        if not header:
            return None
        length = board.frame_length(header)
        if board.is_bulk(header):
            self.answer = read_bulk(self, length, float("inf"))
            return self.answer.message
        self.answer = None
        return board.decode_frame(self.stream.read(length))

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(message)
        answer = self.read()
        assert answer is not None
        return answer

    def ask_job(self, request: bytes) -> dict[str, Any]:
        """A job's bulk request frame (:func:`echo_request`) sent, its answer read."""
        self.sock.sendall(request)
        answer = self.read()
        assert answer is not None
        return answer

    def close(self) -> None:
        self.stream.close()
        self.sock.close()


@pytest.fixture(params=PYTHONS)
def listener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Listener]:
    agent = Listener(request.param, tmp_path)
    agent.wait_listening()
    yield agent
    agent.stop()


def echo_request(folder: Path, job_id: str, run_timeout_s: float = 10.0, **options: Any) -> bytes:
    """The bulk request frame of a job for the fake echo adapter (``options`` its adapter's),
    its model deployed as the client deploys it in ``folder/cache``, named from ``folder`` (a
    listener's ``--root``)."""
    model = folder / "model.bin"
    model.write_bytes(b"listen model" * 50)
    spec = JobSpec(
        job_id=job_id,
        adapter="echo",
        model=model,
        inputs=(InputSpec("x", "NCHW", (2, 3, 4, 4), "int8"),),
        adapter_options=options,
        load_timeout_s=10,
        run_timeout_s=run_timeout_s,
    )
    cached = cache_model(folder, model)
    named = ModelRef(f"cache/{cached.path}", cached.sha256)
    document, buffers = frame_job(spec, {"x": X}, named)
    return b"".join(bulk_request({"op": "job", "job": document}, buffers))


def run_relay(
    python: str, folder: Path, data: bytes, *args: str
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [python, "-I", "-S", str(RELAY), *args],
        input=data,
        cwd=folder,
        capture_output=True,
        timeout=60,
        check=False,
    )


def frames(data: bytes) -> list[dict[str, Any]]:
    """The messages of the frames in ``data``, plain or bulk."""
    return [message for message, _ in read_frames(data)]


# --- listen mode ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_end_of_a_connection_is_not_a_shutdown(listener: Listener) -> None:
    first = listener.connect()
    hello = first.read()
    assert hello is not None and hello["op"] == "hello"
    assert hello["pid"] == listener.process.pid
    answer = first.ask_job(echo_request(listener.folder, "one"))
    assert answer["result"]["ok"] and not answer["result"]["timings"]["model_cached"]
    # The device buffers came back in the answer's frame, checked as the client checks them.
    result = result_from_document(answer["result"], first.answer, where="answer", job_id="one")
    assert result.output("x_out").data.tobytes() == X.tobytes()
    first.close()

    # A new connection reaches the same agent, with its adapter and its loaded model.
    second = listener.connect()
    again = second.read()
    assert again is not None and again["pid"] == hello["pid"]
    ping = second.ask({"op": "ping"})
    assert ping["jobs"] == 1 and len(ping["models"]) == 1
    answer = second.ask_job(echo_request(listener.folder, "two"))
    assert answer["result"]["timings"]["model_cached"]
    assert answer["result"]["outputs"][0]["attributes"]["loads"] == 1
    second.close()
    assert listener.process.poll() is None


@pytest.mark.slow
def test_shutdown_exits_and_removes_the_socket(listener: Listener) -> None:
    connection = listener.connect()
    connection.read()
    assert connection.ask({"op": "shutdown"}) == {"op": "shutdown"}
    assert connection.read() is None
    connection.close()
    assert listener.wait() == board.EXIT_OK
    assert not listener.socket.exists()
    assert listener.process.stdout is not None
    assert listener.process.stdout.read() == b""  # nothing but the log, and that on stderr


@pytest.mark.slow
def test_the_socket_is_for_its_owner_only(listener: Listener) -> None:
    mode = listener.socket.lstat().st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600


@pytest.mark.slow
def test_a_desynchronised_connection_costs_only_itself(listener: Listener) -> None:
    connection = listener.connect()
    connection.read()
    connection.sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
    answer = connection.read()
    assert answer is not None and "not npu-hil frames" in answer["error"]["message"]
    assert connection.read() is None  # that connection is over ...
    connection.close()
    other = listener.connect()  # ... the agent is not
    other.read()
    assert other.ask({"op": "ping"})["pid"] == listener.process.pid
    other.close()


@pytest.mark.slow
@pytest.mark.parametrize("python", PYTHONS)
def test_idle_timeout_exits(python: str, tmp_path: Path) -> None:
    agent = Listener(python, tmp_path, "--idle-timeout", "0.5")
    try:
        agent.wait_listening()
        assert agent.wait(30) == board.EXIT_OK
    finally:
        agent.stop()
    assert not agent.socket.exists()
    assert "no connection for 0.5 s" in agent.log.read_text()


@pytest.mark.slow
def test_a_stuck_runtime_exits_and_removes_the_socket(listener: Listener) -> None:
    connection = listener.connect()
    connection.read()
    job = echo_request(listener.folder, "hung", hang={"stage": "run"}, run_timeout_s=0.5)
    answer = connection.ask_job(job)
    assert answer["restart"] and answer["result"]["errors"][0]["type"] == "TimeoutError"
    connection.close()
    assert listener.wait() == board.EXIT_TIMEOUT
    assert not listener.socket.exists()


@pytest.mark.slow
def test_a_stale_socket_is_replaced_and_a_live_one_kept(tmp_path: Path) -> None:
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(tmp_path / SOCKET))
    stale.close()  # the file stays, with nobody behind it: an agent that died
    first = Listener(sys.executable, tmp_path)
    try:
        first.wait_listening()
        connection = first.connect()
        connection.read()
        assert connection.ask({"op": "ping"})["pid"] == first.process.pid
        connection.close()
        second = Listener(sys.executable, tmp_path)
        assert second.wait() == board.EXIT_FAILED
        assert "another agent listens at agent.sock" in second.log.read_text()
        second.stop()
        assert first.process.poll() is None and first.socket.exists()
    finally:
        first.stop()


@pytest.mark.slow
def test_a_path_that_is_not_a_socket_is_refused(tmp_path: Path) -> None:
    (tmp_path / SOCKET).write_text("precious")
    agent = Listener(sys.executable, tmp_path)
    assert agent.wait() == board.EXIT_FAILED
    agent.stop()
    assert (tmp_path / SOCKET).read_text() == "precious"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (("--serve", "--listen", SOCKET), "give one of --serve or --listen SOCKET"),
        ((), "give one of --serve or --listen SOCKET"),
        # A job folder is no way to run a job any more: not a mode, not an argument.
        (("jobs/one",), "unrecognized arguments: jobs/one"),
    ],
)
def test_one_mode_at_a_time(tmp_path: Path, args: tuple[str, ...], phrase: str) -> None:
    assert_refused(tmp_path, ["--root", "cache", *args], phrase)


@pytest.mark.slow
def test_the_model_cache_is_required(tmp_path: Path) -> None:
    """Without ``--root`` every job would be refused: the agent does not start."""
    assert_refused(tmp_path, ["--serve"], "--root")


def assert_refused(folder: Path, args: list[str], phrase: str) -> None:
    """The agent's command line refuses ``args`` with ``phrase``, touching nothing."""
    done = subprocess.run(
        [sys.executable, str(AGENT), *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert phrase in done.stderr
    assert list(folder.iterdir()) == []


# --- the relay -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_relay_carries_requests_and_answers(listener: Listener) -> None:
    python, folder = listener.python, listener.folder
    requests = board.encode_frame({"op": "ping"}) + echo_request(folder, "relayed")
    done = run_relay(python, folder, requests, SOCKET)
    assert done.returncode == relay.EXIT_OK, done.stderr
    hello, ping, answer = frames(done.stdout)
    assert hello["op"] == "hello" and ping["pid"] == hello["pid"] == listener.process.pid
    assert answer["result"]["ok"] and answer["bulk"] == [X.nbytes, X.nbytes]  # in and out
    # A second relay, hello dropped: the same agent, the model still loaded.
    again = run_relay(python, folder, board.encode_frame({"op": "ping"}), "--drop-hello", SOCKET)
    (ping,) = frames(again.stdout)
    assert ping["jobs"] == 1 and len(ping["models"]) == 1
    assert listener.process.poll() is None


@pytest.mark.slow
def test_relay_base64_form_is_checked_both_ways(listener: Listener) -> None:
    python, folder = listener.python, listener.folder
    request = board.encode_frame({"op": "ping"})
    encoded = relay.encode_base64(request)
    digest = hashlib.sha256(request).hexdigest()
    args = ("--base64", "--sha256", digest, "--out", "answer.bin", "--drop-hello", SOCKET)
    done = run_relay(python, folder, encoded, *args)
    assert done.returncode == relay.EXIT_OK, done.stderr
    *body, trailer = done.stdout.splitlines()
    answer = (folder / "answer.bin").read_bytes()
    assert relay.decode_base64(b"\n".join(body)) == answer
    assert trailer.decode() == f"NPU-RELAY {len(answer)} {hashlib.sha256(answer).hexdigest()}"
    assert frames(answer)[0]["op"] == "ping"
    # Longer than --inline-max: only the trailer; the answer is in the file.
    short = run_relay(python, folder, encoded, *args[:-1], "--inline-max", "10", SOCKET)
    assert short.stdout.decode().startswith("NPU-RELAY ")
    # A request damaged on the way is never sent.
    damaged = encoded.replace(encoded[12:13], b"A" if encoded[12:13] != b"A" else b"B", 1)
    refused = run_relay(python, folder, damaged, *args)
    assert refused.returncode == relay.EXIT_DAMAGED and refused.stdout == b""
    assert "does not match its sha256" in refused.stderr.decode()


@pytest.mark.slow
def test_relay_reports_an_agent_that_dies_answering(listener: Listener) -> None:
    job = echo_request(listener.folder, "boom", crash={"stage": "run", "how": "exit"})
    done = run_relay(listener.python, listener.folder, job, SOCKET)
    assert done.returncode == relay.EXIT_CUT
    assert [f["op"] for f in frames(done.stdout)] == ["hello"]  # what came is still written
    assert "closed the connection after 1 of 2 frames" in done.stderr.decode()
    assert listener.wait() == 70


@pytest.mark.parametrize("python", PYTHONS)
def test_relay_without_an_agent(python: str, tmp_path: Path) -> None:
    done = run_relay(python, tmp_path, b"", SOCKET)
    assert done.returncode == relay.EXIT_GONE
    assert (
        done.stderr.decode().strip() == "relay: no agent at agent.sock (No such file or directory)"
    )
    # Waiting for an agent that is starting ends early when it is known to have exited.
    (tmp_path / "exited").write_text("1\n")
    started = time.monotonic()
    waited = run_relay(python, tmp_path, b"", "--wait", "30", "--exited", "exited", SOCKET)
    assert waited.returncode == relay.EXIT_GONE and time.monotonic() - started < 10
    assert "exited" in waited.stderr.decode()


def test_relay_refuses_what_is_not_frames(tmp_path: Path) -> None:
    done = run_relay(sys.executable, tmp_path, b"\x00\x00\x00\x00\x00\x00\x00\x09{}", SOCKET)
    assert done.returncode == relay.EXIT_CUT and "ends inside a frame" in done.stderr.decode()
    usage = run_relay(sys.executable, tmp_path, b"", "--wait")
    assert usage.returncode == relay.EXIT_USAGE and "needs a value" in usage.stderr.decode()


def test_relay_speaks_the_agents_frames() -> None:
    """The relay reads the frame format from the package's own frames.py: the same bytes."""
    assert relay.FRAME_HEADER is board.FRAME_HEADER
    assert relay.frame_length is board.frame_length
    data = board.encode_frame({"op": "ping"}) * 2
    assert relay.whole_frames(data + data[:5]) == (2, len(data))


def test_the_relay_as_a_script_imports_neither_numpy_nor_json(tmp_path: Path) -> None:
    """Run the way a console runs it, the relay's start-up is frames.py and a few builtins."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-I", "-S", str(RELAY), "--wait"],
        capture_output=True,
        cwd=tmp_path,
        timeout=30,
        check=False,
    )
    assert done.returncode == relay.EXIT_USAGE, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines()}
    assert "frames" in imported
    assert not imported & {"numpy", "json", "re", "typing", "wire"}, sorted(imported)
