"""What a hostile or careless client sends a resident agent (``--serve`` on stdin, ``--listen``
on a Unix socket), and the folders it is started in: each case runs the real agent in a
subprocess, which must answer a typed error record, touch nothing outside its ``jobs/`` and stay
up for the next client."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from npu_hil.harness.agent.protocol import ModelRef, bulk_request, frame_job, read_bulk
from npu_hil.harness.board import wire as board
from tests.agent.jobs import FAKE_ADAPTERS, RawSession, X, echo_job
from tests.agent.test_listen import AGENT, PYTHONS, Connection, Listener

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

NOBODY = 65534


def echo_frame(root: Path, job_id: str, **request: Any) -> bytes:
    """A framed job for the fake echo adapter with :data:`X` as its input, its model put in the
    agent's model cache ``root`` first; ``request`` adds fields to the request (``keep``...)."""
    model = root / "echo" / "model.bin"
    if not model.exists():
        model.parent.mkdir(parents=True, exist_ok=True)
        model.write_bytes(b"hostile sessions" * 50)
    ref = ModelRef("echo/model.bin", board.sha256_file(str(model)))
    document, buffers = frame_job(echo_job(model, job_id), {"x": X}, ref)
    return b"".join(bulk_request({"op": "job", "job": document, **request}, buffers))


class StreamReceiver:
    """A blocking byte stream (an agent's stdout, a socket's file) read as a session is."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream

    def recv(self, n: int, timeout: float) -> bytes:
        return self.stream.read(n)


def read_answer(stream: IO[bytes] | None) -> dict[str, Any]:
    """The next frame's message; a bulk frame's buffers read and checked against its trailer."""
    assert stream is not None
    header = stream.read(board.FRAME_HEADER.size)
    length = board.frame_length(header)
    if not board.is_bulk(header):
        return board.decode_frame(stream.read(length))
    answer = read_bulk(StreamReceiver(stream), length, float("inf"))
    assert answer.ours == answer.theirs
    return answer.message


def nested(depth: int) -> bytes:
    """A frame whose payload is a JSON object nested ``depth`` lists deep."""
    payload = ('{"op": "ping", "x": ' + "[" * depth + "]" * depth + "}").encode()
    return len(payload).to_bytes(8, "big") + payload


# --- session mode --------------------------------------------------------------------------------


def test_a_deeply_nested_frame_is_answered_and_the_session_goes_on(tmp_path: Path) -> None:
    raw = RawSession(tmp_path)
    raw.read()
    for depth in (100_000, board.MAX_JSON_DEPTH + 1):
        raw.send_bytes(nested(depth))
        answer = raw.read()
        assert answer["op"] == "error", answer
        assert answer["error"]["type"] == "ProtocolError"
        assert "nested deeper than" in answer["error"]["message"]
    raw.send({"op": "ping"})
    assert raw.read()["pid"] == raw.process.pid
    raw.send({"op": "shutdown"})
    raw.read()
    returncode, _, err = raw.finish()
    assert returncode == 0 and b"Traceback" not in err


def test_a_frame_that_is_not_utf8_is_answered(tmp_path: Path) -> None:
    raw = RawSession(tmp_path)
    raw.read()
    raw.send_bytes((2).to_bytes(8, "big") + b"\xff\xfe")
    assert raw.read()["error"]["type"] == "ProtocolError"
    raw.send({"op": "ping"})
    assert raw.read()["op"] == "ping"
    raw.send({"op": "shutdown"})
    raw.read()
    assert raw.finish()[0] == 0


def test_a_request_frame_over_the_cap_is_refused_unread(tmp_path: Path) -> None:
    raw = RawSession(tmp_path)
    raw.read()
    raw.send_bytes((board.MAX_REQUEST_BYTES + 1).to_bytes(8, "big"))
    answer = raw.read()
    assert answer["op"] == "error" and "exceeds the cap" in answer["error"]["message"]
    assert raw.finish()[0] == board.EXIT_FAILED


def test_a_request_naming_a_job_folder_writes_nothing_there(tmp_path: Path) -> None:
    """``{"op": "job", "dir": "/"}`` must not make the agent write ``/result.json``, nor any
    folder inside or outside ``jobs/`` get one, nor a job folder found there be run: a request
    without its job document is refused whatever folder it names, and a framed job whose request
    names a folder besides runs as any framed job does, touching no folder."""
    work = tmp_path / "work"
    (work / "jobs").mkdir(parents=True)
    outside = tmp_path / "jobs" / "elsewhere"
    outside.mkdir(parents=True)
    # A folder that looks like a job's as folder jobs had them: a job.json and an input file.
    (outside / "job.json").write_text(json.dumps({"job_id": "elsewhere", "adapter": "echo"}))
    (outside / "input_0.bin").write_bytes(X.tobytes())
    before = os.path.exists("/result.json")
    raw = RawSession(work)
    raw.read()
    for target in ("/", str(outside), "jobs/../elsewhere", "jobs", "jobs/a/b", "jobs/elsewhere"):
        raw.send({"op": "job", "dir": target})
        answer = raw.read()
        assert answer["op"] == "job" and "result" not in answer, (target, answer)
        assert (answer["error"]["field"], answer["error"]["reason"]) == ("job", "missing")
        raw.send_bytes(echo_frame(work / "cache", "framed", dir=target))
        assert read_answer(raw.process.stdout)["result"]["ok"], target
    raw.send({"op": "ping"})
    assert raw.read()["jobs"] == 6  # the framed ones alone
    raw.send({"op": "shutdown"})
    raw.read()
    assert raw.finish()[0] == 0
    assert sorted(p.name for p in outside.iterdir()) == ["input_0.bin", "job.json"]
    assert list((work / "jobs").iterdir()) == [] and list(work.rglob("result.json")) == []
    assert os.path.exists("/result.json") == before


@pytest.mark.parametrize("how", ["jobs-link", "entry-link"])
def test_a_kept_job_never_writes_through_a_symlink(tmp_path: Path, how: str) -> None:
    """A request's ``keep`` cannot make the agent write a job's files through a symlink: not a
    ``jobs/`` folder replaced by one once the agent runs (its workdir is checked at start), not
    a ``jobs/<name>`` that is one. Refused before the job runs; the link's target untouched."""
    work = tmp_path / "work"
    (work / "jobs").mkdir(parents=True)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data").write_bytes(b"keep")
    raw = RawSession(work)
    raw.read()
    if how == "jobs-link":
        (work / "jobs").rmdir()
        (work / "jobs").symlink_to(precious)
        keep, reason = "jobs/new", "unsafe"
    else:
        (work / "jobs" / "link").symlink_to(precious)
        keep, reason = "jobs/link", "path"  # not a new folder
    raw.send_bytes(echo_frame(work / "cache", "kept", keep=keep))
    answer = raw.read()
    assert answer["op"] == "job" and "result" not in answer, answer
    assert (answer["error"]["field"], answer["error"]["reason"]) == ("keep", reason)
    raw.send({"op": "ping"})
    assert raw.read()["jobs"] == 0  # the job never ran
    raw.send({"op": "shutdown"})
    raw.read()
    assert raw.finish()[0] == 0
    assert [p.name for p in precious.iterdir()] == ["data"]
    assert (precious / "data").read_bytes() == b"keep"


def test_discard_through_a_symlinked_jobs_folder_removes_nothing(tmp_path: Path) -> None:
    """The session removes no folder for the host any more: ``discard`` naming a victim behind
    a ``jobs/`` symlink planted once the agent runs is an unknown op, answered with a
    ProtocolError record, and the victim is untouched."""
    work = tmp_path / "work"
    work.mkdir()
    precious = tmp_path / "precious"
    (precious / "victim").mkdir(parents=True)
    (precious / "victim" / "data").write_bytes(b"keep")
    # The workdir is checked at start too: the link is planted once the agent runs.
    raw = RawSession(work)
    raw.read()
    (work / "jobs").symlink_to(precious)
    raw.send({"op": "discard", "dir": "jobs/victim"})
    answer = raw.read()
    assert answer["op"] == "discard" and answer["error"]["type"] == "ProtocolError", answer
    assert answer["error"]["message"] == "unknown op 'discard'"
    assert (precious / "victim" / "data").read_bytes() == b"keep"
    raw.send({"op": "ping"})
    assert raw.read()["pid"] == raw.process.pid
    raw.send({"op": "shutdown"})
    raw.read()
    assert raw.finish()[0] == 0


# --- the folders a resident agent starts in ------------------------------------------------------


def unsafe(folder: Path, how: str) -> str:
    """Make ``folder`` unsafe in one way; the phrase the refusal must contain."""
    if how == "0777":
        folder.chmod(0o777)
        return "mode 0777"
    if how == "other-owner":
        if os.geteuid() != 0:
            pytest.skip("giving a folder to another user needs root")
        os.chown(folder, NOBODY, NOBODY)
        return f"owner uid {NOBODY}"
    assert how == "jobs-link"
    (folder / "jobs").symlink_to("/tmp")
    return "symbolic link"


@pytest.mark.parametrize("how", ["0777", "other-owner", "jobs-link"])
@pytest.mark.parametrize("mode", ["--serve", "--listen"])
def test_a_workdir_another_user_controls_is_refused(tmp_path: Path, how: str, mode: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    phrase = unsafe(work, how)
    done = subprocess.run(
        [
            sys.executable,
            str(AGENT),
            mode,
            *(["agent.sock", "--idle-timeout", "2"] if mode == "--listen" else []),
            "--root",
            "cache",
            "--adapters",
            str(FAKE_ADAPTERS),
        ],
        cwd=work,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == board.EXIT_FAILED, done.stderr
    assert "cannot start" in done.stderr and phrase in done.stderr, done.stderr
    assert not (work / "agent.sock").exists()


# --- listen mode ---------------------------------------------------------------------------------


@pytest.fixture(params=PYTHONS)
def python(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def start(python: str, folder: Path, *extra: str) -> Listener:
    agent = Listener(python, folder, *extra)
    agent.wait_listening()
    return agent


def test_a_deeply_nested_frame_does_not_end_a_listening_agent(python: str, tmp_path: Path) -> None:
    agent = start(python, tmp_path)
    try:
        connection = agent.connect()
        connection.read()
        connection.sock.sendall(nested(100_000))
        answer = connection.read()
        assert answer is not None and answer["error"]["type"] == "ProtocolError"
        assert connection.ask({"op": "ping"})["pid"] == agent.process.pid  # same connection
        connection.close()
        assert agent.process.poll() is None and agent.socket.exists()
        assert "Traceback" not in agent.log.read_text()
    finally:
        agent.stop()


def test_a_silent_connection_blocks_no_other_client(python: str, tmp_path: Path) -> None:
    agent = start(python, tmp_path)
    try:
        silent = agent.connect()
        silent.read()  # connected, then says nothing
        other = Connection(agent.socket)
        other.sock.settimeout(10)
        assert other.read() is not None  # its hello, at once
        other.sock.sendall(echo_frame(tmp_path, "while-silent"))  # --root . is its folder
        answer = read_answer(other.stream)
        assert answer["result"]["ok"], answer["result"]["errors"]
        other.close()
        silent.close()
    finally:
        agent.stop()


def test_a_silent_connection_is_dropped_after_the_read_timeout(python: str, tmp_path: Path) -> None:
    agent = start(python, tmp_path, "--read-timeout", "1")
    try:
        silent = agent.connect()
        silent.read()
        started = time.monotonic()
        answer = silent.read()
        assert answer is not None
        assert re.search(r"no complete request within 1(\.\d+)? s", answer["error"]["message"])
        assert silent.read() is None and time.monotonic() - started < 10
        silent.close()
        other = agent.connect()
        other.read()
        assert other.ask({"op": "ping"})["pid"] == agent.process.pid  # the agent is still up
    finally:
        agent.stop()


def served(agent: Listener) -> Connection:
    """A connection the agent serves, once a place is free (wait_listening's probe, closed at
    once, holds one for a moment)."""
    deadline = time.monotonic() + 10
    while True:
        connection = agent.connect()
        hello = connection.read()
        assert hello is not None
        if hello["op"] == "hello":
            return connection
        connection.close()
        assert time.monotonic() < deadline, hello
        time.sleep(0.05)


def test_connections_over_the_bound_are_told_and_closed(python: str, tmp_path: Path) -> None:
    agent = start(python, tmp_path, "--max-connections", "2")
    try:
        held = [served(agent), served(agent)]
        extra = agent.connect()
        answer = extra.read()
        assert answer is not None and "already serves 2 connections" in answer["error"]["message"]
        assert extra.read() is None
        held[0].close()
        again = served(agent)  # the freed place is taken by the next client
        assert again.ask({"op": "ping"})["pid"] == agent.process.pid
    finally:
        agent.stop()


def test_half_a_frame_then_silence_costs_only_that_connection(python: str, tmp_path: Path) -> None:
    agent = start(python, tmp_path, "--read-timeout", "1")
    try:
        cut = agent.connect()
        cut.read()
        cut.sock.sendall(board.encode_frame({"op": "ping"})[:12])
        answer = cut.read()
        assert answer is not None and answer["error"]["type"] == "ProtocolError"
        cut.close()
        other = agent.connect()
        other.read()
        assert other.ask({"op": "ping"})["pid"] == agent.process.pid
    finally:
        agent.stop()


def test_the_unix_socket_refuses_garbage_lengths(python: str, tmp_path: Path) -> None:
    agent = start(python, tmp_path)
    try:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(10)
        probe.connect(str(agent.socket))
        stream = probe.makefile("rb")
        header = stream.read(8)
        stream.read(board.frame_length(header))
        probe.sendall((board.MAX_REQUEST_BYTES + 1).to_bytes(8, "big"))
        header = stream.read(8)
        answer = json.loads(stream.read(board.frame_length(header)))
        assert "exceeds the cap" in answer["error"]["message"]
        stream.close()
        probe.close()
        assert agent.process.poll() is None
    finally:
        agent.stop()


def test_a_byte_a_time_client_is_cut_at_one_deadline_for_the_whole_request(
    python: str, tmp_path: Path
) -> None:
    agent = start(python, tmp_path, "--read-timeout", "1")
    try:
        slow = agent.connect()
        slow.read()
        frame = board.encode_frame({"op": "ping", "pad": "x" * 200})
        stop = threading.Event()

        def trickle() -> None:  # a byte every 0.2 s: each recv alone would never time out
            for byte in frame:
                if stop.wait(0.2):
                    return
                try:
                    slow.sock.sendall(bytes([byte]))
                except OSError:
                    return

        sender = threading.Thread(target=trickle, daemon=True)
        started = time.monotonic()
        sender.start()
        other = served(agent)  # served meanwhile: the slow client holds only its own place
        assert other.ask({"op": "ping"})["pid"] == agent.process.pid
        answer = slow.read()
        elapsed = time.monotonic() - started
        stop.set()
        assert answer is not None and answer["error"]["type"] == "ProtocolError"
        message = answer["error"]["message"]
        assert "no complete request within" in message and "deadline of a request: 1 s" in message
        assert elapsed < 5  # not 200 bytes x 0.2 s
        other.close()
        slow.close()
    finally:
        agent.stop()


def test_a_bulk_frame_past_the_job_cap_is_refused_and_the_session_goes_on(tmp_path: Path) -> None:
    raw = RawSession(tmp_path, "--max-job-bytes", str(1 << 20))
    raw.read()
    buffer = memoryview(bytes(2 << 20))
    for piece in board.encode_bulk_frame({"op": "job", "job": {}, "bulk": [len(buffer)]}, [buffer]):
        raw.send_bytes(bytes(piece))
    answer = raw.read()
    assert answer["op"] == "error" and answer["error"]["type"] == "ProtocolError"
    assert f"exceed this agent's cap of {1 << 20} bytes" in answer["error"]["message"]
    raw.send({"op": "ping"})
    assert raw.read()["pid"] == raw.process.pid  # still up, still in step
    raw.send({"op": "shutdown"})
    raw.read()
    returncode, _, err = raw.finish()
    assert returncode == 0 and b"Traceback" not in err and b"MemoryError" not in err
