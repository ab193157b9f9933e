"""SerialTransport against a real shell on a pseudo-terminal (socat), with a noisy bridge and a
board that reboots. Every wait is bounded by the transport's own timeouts."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.agent import serial_stream
from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.board import relay
from npu_hil.harness.errors import DeviceError, TransportError
from npu_hil.harness.transport import Stream
from npu_hil.harness.transport.serial_console import SerialTransport, prepare_url
from tests.agent.jobs import FAKE_ADAPTERS, X, echo_job, sim_job
from tests.transport.conftest import NoisyRelay, SerialBoard

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

PASSWORD_ENV = "NPU_HIL_TEST_SERIAL_PASSWORD"


def make(board: SerialBoard, tmp_path: Path, **kwargs: object) -> SerialTransport:
    options: dict[str, object] = {"command_timeout": 5.0, "connect_timeout": 10.0}
    options.update(kwargs)
    url = str(options.pop("url", board.tty))
    return SerialTransport(url, workdir=str(tmp_path / "remote"), **options)  # type: ignore[arg-type]


def test_login_with_password_from_environment(
    serial_login_board: SerialBoard, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, "s3cret pw")
    with make(serial_login_board, tmp_path, user="tester", password_env=PASSWORD_ENV) as t:
        assert t.run(["echo", "in"], timeout=5).stdout == b"in\n"


def test_login_without_password_in_environment_is_refused(
    serial_login_board: SerialBoard, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    with pytest.raises(TransportError, match=PASSWORD_ENV):
        make(serial_login_board, tmp_path, user="tester", password_env=PASSWORD_ENV)


def test_timeout_is_bounded_and_the_console_recovers(
    serial_board: SerialBoard, tmp_path: Path
) -> None:
    with make(serial_board, tmp_path) as transport:
        started = time.monotonic()
        with pytest.raises(TransportError, match=r"within 1\.0 s"):
            transport.run(["sleep", "30"], timeout=1.0)
        assert time.monotonic() - started < 8
        assert transport.run(["echo", "ok"], timeout=5).stdout == b"ok\n"


def test_reboot_is_detected_boot_log_kept_and_next_call_works(
    serial_login_board: SerialBoard, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, "s3cret pw")
    with make(serial_login_board, tmp_path, user="tester", password_env=PASSWORD_ENV) as t:
        # Kill the console's shell: the fake board prints a new boot log and a login prompt.
        with pytest.raises(TransportError, match="reboot"):
            t.run(["sh", "-c", "sleep 0.2; kill -9 $PPID"], timeout=5)
        assert "(boot 2)" in t.boot_log
        assert t.run(["echo", "back"], timeout=5).stdout == b"back\n"


def test_two_transports_take_turns_on_one_console(
    serial_board: SerialBoard, tmp_path: Path
) -> None:
    """Like pytest-xdist workers sharing a board: each exchange holds the device, and a shell
    set up again by the other transport is not taken for a reboot."""
    failures: list[str] = []

    def work(name: str) -> None:
        with make(serial_board, tmp_path) as transport:
            for i in range(15):
                try:
                    out = transport.run(["echo", f"{name}{i}"], timeout=5).stdout
                except TransportError as exc:
                    out = str(exc).encode()
                if out != f"{name}{i}\n".encode():
                    failures.append(f"{name}{i}: {out!r}")
            if transport.take_boot_log():
                failures.append(f"{name}: took the other transport for a reboot")

    workers = [threading.Thread(target=work, args=(name,)) for name in "ab"]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert failures == []


def test_noisy_line_identical_bytes_after_retransmission(
    serial_board: SerialBoard, tmp_path: Path
) -> None:
    data = np.random.default_rng(3).integers(0, 256, 64_000, dtype=np.uint8).tobytes()
    (tmp_path / "in.bin").write_bytes(data)
    relay = NoisyRelay(serial_board.tty, flip_rate=2e-5, drop_rate=1e-5, seed=5)
    try:
        transport = make(
            serial_board,
            tmp_path,
            url=relay.url,
            chunk_size=2048,
            retries=8,
            command_timeout=1.5,
        )
        with transport:
            transport.put(tmp_path / "in.bin", "noisy.bin")
            transport.get("noisy.bin", tmp_path / "out.bin")
    finally:
        relay.close()
    assert (Path(transport.workdir) / "noisy.bin").read_bytes() == data
    assert (tmp_path / "out.bin").read_bytes() == data
    assert relay.flipped + relay.dropped > 0  # the noise really happened


def test_hopeless_line_fails_with_transport_error_not_corruption(
    serial_board: SerialBoard, tmp_path: Path
) -> None:
    data = os.urandom(20_000)
    (tmp_path / "in.bin").write_bytes(data)
    relay = NoisyRelay(serial_board.tty, flip_rate=0.0, drop_rate=0.0, seed=9)
    try:
        noisy = make(
            serial_board, tmp_path, url=relay.url, chunk_size=8192, retries=1, command_timeout=1.0
        )
        relay.flip_rate = 2e-3  # every chunk is damaged on the way
        started = time.monotonic()
        with pytest.raises(TransportError):
            noisy.put(tmp_path / "in.bin", "hopeless.bin")
        assert time.monotonic() - started < 25
        noisy.close()
    finally:
        relay.close()
    assert not (tmp_path / "remote" / "hopeless.bin").exists()


def test_rfc2217_urls_get_ign_set_control() -> None:
    assert prepare_url("rfc2217://h:1") == "rfc2217://h:1?ign_set_control"
    assert prepare_url("rfc2217://h:1?logging=debug") == (
        "rfc2217://h:1?logging=debug&ign_set_control"
    )
    assert prepare_url("rfc2217://h:1?ign_set_control") == "rfc2217://h:1?ign_set_control"
    assert prepare_url("socket://h:1") == "socket://h:1"
    assert prepare_url("/dev/ttyUSB0") == "/dev/ttyUSB0"


# pyserial 3.5's rfc2217 client still calls Thread.setDaemon/setName.
@pytest.mark.filterwarnings("ignore:set(Daemon|Name).. is deprecated:DeprecationWarning")
def test_rfc2217_through_ser2net(
    serial_board: SerialBoard, ser2net_url: str, tmp_path: Path
) -> None:
    data = os.urandom(50_000)
    (tmp_path / "in.bin").write_bytes(data)
    started = time.monotonic()
    with make(serial_board, tmp_path, url=ser2net_url) as transport:
        assert transport.url.endswith("?ign_set_control")
        assert time.monotonic() - started < 5  # no wait for the 'control' option
        assert transport.run(["echo", "net"], timeout=5).stdout == b"net\n"
        transport.put(tmp_path / "in.bin", "net.bin")
        transport.get("net.bin", tmp_path / "out.bin")
    assert (tmp_path / "out.bin").read_bytes() == data


def test_agent_runs_a_sim_job_one_shot_over_serial(
    serial_board: SerialBoard, tmp_path: Path
) -> None:
    spec, inputs = sim_job(tmp_path, "serial-one", "rk3562")
    with make(serial_board, tmp_path, python=sys.executable, command_timeout=20.0) as transport:
        with AgentClient(transport, resident=False) as client:
            result = client.submit(spec, inputs)
            assert result.ok, result
            assert result.outputs
        assert list((Path(transport.workdir) / "jobs").glob("*")) == []


@pytest.mark.parametrize("size", [0, 3000, 16 * 1024])
def test_a_file_of_one_chunk_is_one_exchange_each_way(
    serial_board: SerialBoard, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    data = os.urandom(size)
    (tmp_path / "in.bin").write_bytes(data)
    with make(serial_board, tmp_path) as transport:
        commands: list[str] = []
        exec_ = transport._exec

        def counted(command: str, timeout: float, **kwargs: Any) -> tuple[bytes, int]:
            commands.append(command)
            return exec_(command, timeout, **kwargs)

        monkeypatch.setattr(transport, "_exec", counted)
        transport.put(tmp_path / "in.bin", "d/one.bin")
        assert len(commands) == 1
        transport.get("d/one.bin", tmp_path / "out.bin")
        assert len(commands) == 2
    assert (tmp_path / "out.bin").read_bytes() == data
    # Checked and renamed into place, no temporary left beside it.
    assert os.listdir(Path(transport.workdir) / "d") == ["one.bin"]
    assert (Path(transport.workdir) / "d" / "one.bin").read_bytes() == data


# --- a resident agent reached through the relay ----------------------------------


@pytest.fixture
def echo_model(tmp_path: Path) -> Path:
    path = tmp_path / "echo.bin"
    path.write_bytes(b"serial model" * 40)
    return path


@pytest.fixture
def session_client(serial_board: SerialBoard, tmp_path: Path) -> Iterator[AgentClient]:
    """An AgentClient with a resident agent (the default) over the console."""
    transport = make(serial_board, tmp_path, python=sys.executable, command_timeout=20.0)
    with (
        transport,
        AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS], margin_s=2.0) as client,
    ):
        yield client


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def session_files(client: AgentClient) -> list[str]:
    return sorted(
        p.name for p in Path(client.transport.workdir).iterdir() if p.name.startswith(".npu-")
    )


def test_one_resident_agent_serves_every_job(session_client: AgentClient, echo_model: Path) -> None:
    first = session_client.submit(echo_job(echo_model, "one"), {"x": X})
    pid = session_client.agent_pid
    second = session_client.submit(echo_job(echo_model, "two"), {"x": X})
    assert first.ok and second.ok
    assert session_client.agent_pid == pid and session_client.agents_started == 1
    assert not first.timings.model_cached
    assert second.timings.model_cached and second.output("x_out").attributes["loads"] == 1
    assert second.output("x_out").data.tobytes() == X.tobytes()
    assert session_client.ping()["jobs"] == 2
    assert pid is not None and running(pid)
    # Between requests the console is a plain shell; the jobs' buffers moved in the relay's
    # frames, so no job folder was ever made.
    assert not (Path(session_client.transport.workdir) / "jobs").exists()
    assert [name.rsplit(".", 1)[1] for name in session_files(session_client)] == [
        "err",
        "out",
        "pid",
        "sock",
    ]

    session_client.close()
    assert not running(pid)
    assert session_files(session_client) == []  # no socket, no log, no status left behind


def test_sim_jobs_keep_the_runtime_warm_over_serial(
    serial_board: SerialBoard, tmp_path: Path
) -> None:
    spec, inputs = sim_job(tmp_path, "serial-sim", "rk3588")
    with (
        make(serial_board, tmp_path, python=sys.executable, command_timeout=20.0) as transport,
        AgentClient(transport) as client,
    ):
        results = [client.submit(spec, inputs) for _ in range(3)]
        assert all(r.ok and r.outputs for r in results)
        assert [r.timings.model_cached for r in results] == [False, True, True]
        assert client.agents_started == 1


def test_an_agent_killed_on_the_board_is_replaced(
    session_client: AgentClient, echo_model: Path
) -> None:
    assert session_client.submit(echo_job(echo_model, "before"), {"x": X}).ok
    pid = session_client.agent_pid
    assert session_client.transport.run(["kill", "-9", str(pid)], timeout=10).returncode == 0
    # Nothing reached the agent: a link failure (the plugin retries those), not a device one.
    with pytest.raises(TransportError, match="the agent is gone, the request was not delivered"):
        session_client.submit(echo_job(echo_model, "lost"), {"x": X})
    after = session_client.submit(echo_job(echo_model, "after"), {"x": X})
    assert after.ok and not after.timings.model_cached
    assert session_client.agents_started == 2
    assert session_client.agent_pid not in (None, pid)


def test_a_crash_while_answering_is_a_device_error(
    session_client: AgentClient, echo_model: Path
) -> None:
    crash = echo_job(echo_model, "boom", adapter_options={"crash": {"stage": "run"}})
    with pytest.raises(DeviceError, match=r"job boom: the agent died \(exit status 70") as exc:
        session_client.submit(crash, {"x": X})
    assert "crashing on purpose in run" in str(exc.value)  # the agent's log came back
    assert session_client.submit(echo_job(echo_model, "alive"), {"x": X}).ok
    assert session_client.agents_started == 2


def test_a_job_past_its_timeout_restarts_the_session(
    session_client: AgentClient, echo_model: Path
) -> None:
    assert session_client.submit(echo_job(echo_model, "before"), {"x": X}).ok
    first = session_client.agent_pid
    hung = echo_job(
        echo_model, "hung", run_timeout_s=0.5, adapter_options={"hang": {"stage": "run"}}
    )
    result = session_client.submit(hung, {"x": X})
    (error,) = result.errors
    assert (error.type, error.stage) == ("TimeoutError", "run")
    assert isinstance(result.error(), TransportError)
    after = session_client.submit(echo_job(echo_model, "after"), {"x": X})
    assert after.ok and session_client.agents_started == 2
    assert first is not None and not running(first)
    assert session_client.agent_pid not in (None, first)


def test_a_frozen_agent_is_killed_and_replaced(
    session_client: AgentClient, echo_model: Path
) -> None:
    session_client.deploy_model(echo_model)  # in the agent's stream: the agent is up after it
    pid = session_client.agent_pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # not even the agent's own watchdog can answer now
    quick = echo_job(echo_model, "frozen", load_timeout_s=0.2, run_timeout_s=0.2)
    started = time.monotonic()
    with pytest.raises(TransportError, match="job frozen: no answer from the agent within 3 s"):
        session_client.submit(quick, {"x": X})
    assert time.monotonic() - started < 30
    assert not running(pid)
    assert session_client.submit(echo_job(echo_model, "next"), {"x": X}).ok
    assert session_client.agents_started == 2


def flip(data: str) -> str:
    """One base64 character changed (not its length, so the damage is in the content)."""
    return data[:10] + ("A" if data[10] != "A" else "B") + data[11:]


def test_damage_on_the_line_is_caught_both_ways(
    session_client: AgentClient, echo_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request damaged on the way is refused by the relay and sent again; an answer damaged
    on the way back is fetched from the board's copy: its requests are not run twice."""
    transport = session_client.transport
    assert isinstance(transport, SerialTransport)
    before = session_client.ping()["jobs"]
    exec_, get_bytes = transport._exec, transport._get_bytes
    statuses: list[int] = []
    fetched: list[str] = []

    def noisy(command: str, timeout: float, **kwargs: Any) -> tuple[bytes, int]:
        relayed = "relay.py" in command
        if relayed and "<<'" in command and not statuses:
            head, body = command.split("\n", 1)
            output, status = exec_(f"{head}\n{flip(body)}", timeout, **kwargs)
            statuses.append(status)
            return output, status
        output, status = exec_(command, timeout, **kwargs)
        if relayed and status == 0 and len(statuses) == 1:
            statuses.append(status)
            output = flip(output.decode()).encode()
        return output, status

    def spy(path: str, *args: Any) -> bytes:
        fetched.append(str(path))
        return get_bytes(path, *args)

    monkeypatch.setattr(transport, "_exec", noisy)
    monkeypatch.setattr(transport, "_get_bytes", spy)
    result = session_client.submit(echo_job(echo_model, "noisy"), {"x": X})
    assert result.ok
    assert statuses == [relay.EXIT_DAMAGED, relay.EXIT_OK]
    assert [name for name in fetched if name.endswith(".out")] != []
    assert session_client.ping()["jobs"] == before + 1  # the job ran once
    assert session_client.agents_started == 1


def test_long_answers_come_back_as_files(
    session_client: AgentClient, echo_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transport = session_client.transport
    assert isinstance(transport, SerialTransport)
    monkeypatch.setattr(serial_stream, "INLINE_MAX", 64)
    get_bytes = transport._get_bytes
    fetched: list[str] = []

    def spy(path: str, *args: Any) -> bytes:
        fetched.append(str(path))
        return get_bytes(path, *args)

    monkeypatch.setattr(transport, "_get_bytes", spy)
    result = session_client.submit(echo_job(echo_model, "long"), {"x": X})
    assert result.ok and session_client.ping()["op"] == "ping"
    assert len([name for name in fetched if name.endswith(".out")]) >= 3  # hello, job, ping


def test_one_resident_agent_per_console(serial_board: SerialBoard, tmp_path: Path) -> None:
    with make(serial_board, tmp_path, python=sys.executable) as transport:
        with pytest.raises(TransportError, match="a stream runs the npu-hil agent"):
            transport.open_stream(["cat"])
        agent = AgentClient(transport)
        argv = [sys.executable, str(agent.deploy()), "--serve", "--root", "cache"]
        session = transport.open_stream(argv)
        assert isinstance(session, Stream)
        with pytest.raises(TransportError, match="already runs on this console"):
            transport.open_stream(argv)
        assert session.recv(8, 60)  # the hello's first bytes
        ended = session.close()
        assert session.close() is ended and ended.returncode == -signal.SIGTERM
        # Closed at once, before the agent's pid is even on record: it is still stopped.
        at_once = transport.open_stream(argv)
        assert at_once.close(timeout=0).returncode is not None
        assert not _processes_named(at_once.name)
        agent.close()


def _processes_named(text: str) -> list[int]:
    """Processes on this machine (the fake board) whose command line contains ``text``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and text.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_the_relay_alone_without_an_agent(serial_board: SerialBoard, tmp_path: Path) -> None:
    with make(serial_board, tmp_path, python=sys.executable) as transport:
        agent = AgentClient(transport)
        relay_path = str(agent.deploy() / "relay.py")
        done = transport.run([sys.executable, relay_path, ".npu-nobody.sock"], timeout=20)
        assert done.returncode == relay.EXIT_GONE
        assert done.stderr.startswith(b"relay: no agent at .npu-nobody.sock")
        agent.close()


def test_an_agent_that_cannot_start(serial_board: SerialBoard, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "base.py").write_text("raise RuntimeError('no NPU runtime on this board')\n")
    with (
        make(serial_board, tmp_path, python=sys.executable) as transport,
        AgentClient(transport, adapter_dirs=[broken]) as client,
    ):
        started = time.monotonic()
        with pytest.raises(DeviceError, match=r"(?s)did not start \(exit status 1\).*no NPU"):
            client.ping()
        assert time.monotonic() - started < 20  # the relay stopped waiting when it exited
        assert session_files(client) == []
