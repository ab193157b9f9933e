"""SerialTransport against a real shell on a pseudo-terminal (socat), with a noisy bridge and a
board that reboots. Every wait is bounded by the transport's own timeouts."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness.agent.client import AgentClient
from harness.agent.protocol import InputSpec, JobSpec
from harness.errors import TransportError
from harness.models import build, save
from harness.transport import RemotePathError, Transport
from harness.transport.serial_console import SerialTransport, prepare_url
from tests.transport.conftest import NoisyRelay, SerialBoard

PASSWORD_ENV = "NPU_HIL_TEST_SERIAL_PASSWORD"


def make(board: SerialBoard, tmp_path: Path, **kwargs: object) -> SerialTransport:
    options: dict[str, object] = {"command_timeout": 5.0, "connect_timeout": 10.0}
    options.update(kwargs)
    url = str(options.pop("url", board.tty))
    return SerialTransport(url, workdir=str(tmp_path / "remote"), **options)  # type: ignore[arg-type]


def test_runs_commands_with_exit_status_and_streams(
    serial_board: SerialBoard, tmp_path: Path
) -> None:
    with make(serial_board, tmp_path) as transport:
        assert isinstance(transport, Transport)
        run = transport.run(["sh", "-c", "echo out; echo err >&2; exit 7"], timeout=5)
        assert (run.returncode, run.stdout, run.stderr) == (7, b"out\n", b"err\n")
        # Arguments arrive verbatim: quoting is the transport's job, not the caller's.
        odd = ["printf", "%s|", "a b", "$HOME", "'q'", "; rm -rf /"]
        assert transport.run(odd, timeout=5).stdout == b"a b|$HOME|'q'|; rm -rf /|"
        binary = bytes(range(256))
        assert transport.run(["cat"], timeout=5, stdin=binary).stdout == binary
        assert transport.run(["pwd"], timeout=5).stdout.strip() == transport.workdir.encode()


def test_put_get_identical_bytes(serial_board: SerialBoard, tmp_path: Path) -> None:
    data = np.random.default_rng(7).integers(0, 256, 300_000, dtype=np.uint8).tobytes()
    source = tmp_path / "in.bin"
    source.write_bytes(data)
    with make(serial_board, tmp_path) as transport:
        transport.put(source, "deep/dir/blob.bin")
        assert (Path(transport.workdir) / "deep/dir/blob.bin").read_bytes() == data
        transport.get("deep/dir/blob.bin", tmp_path / "back" / "blob.bin")
        assert (tmp_path / "back" / "blob.bin").read_bytes() == data
        empty = tmp_path / "empty"
        empty.write_bytes(b"")
        transport.put(empty, "empty")
        transport.get("empty", tmp_path / "empty.back")
        assert (tmp_path / "empty.back").read_bytes() == b""
        assert transport.exists("deep/dir") and not transport.exists("nope")
        with pytest.raises(TransportError, match="no such file"):
            transport.get("nope", tmp_path / "nope")
        with pytest.raises(RemotePathError):
            transport.put(source, "../escape")
        with pytest.raises(RemotePathError):
            transport.get("/etc/passwd", tmp_path / "x")
        transport.cleanup("deep")
        assert not transport.exists("deep")
        # No temporary files left behind by the transfers.
        assert sorted(p.name for p in Path(transport.workdir).iterdir()) == ["empty"]


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


def test_open_session_is_refused_clearly(serial_board: SerialBoard, tmp_path: Path) -> None:
    with (
        make(serial_board, tmp_path) as transport,
        pytest.raises(TransportError, match="sessions=False"),
    ):
        transport.open_session(["cat"])


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
    model = save(build("conv1x1", (1, 3, 3, 5)), tmp_path / "model.onnx")
    x = np.random.default_rng(1).integers(0, 256, (1, 3, 3, 5), dtype=np.uint8)
    spec = JobSpec(
        job_id="serial-one",
        adapter="sim",
        model=model,
        inputs=(InputSpec("input", "NCHW", (1, 3, 3, 5), "uint8"),),
        adapter_options={"target": "rk3562"},
        load_timeout_s=30,
        run_timeout_s=30,
    )
    with make(serial_board, tmp_path, python=sys.executable, command_timeout=20.0) as transport:
        with AgentClient(transport, sessions=False, scratch=tmp_path / "scratch") as client:
            result = client.submit(spec, {"input": x})
            assert result.ok, result
            assert result.outputs
        assert list((Path(transport.workdir) / "jobs").iterdir()) == []
