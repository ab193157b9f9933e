"""SshTransport against a real OpenSSH sshd on 127.0.0.1 (started by the ``sshd`` fixture)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness.agent.client import AgentClient
from harness.agent.protocol import InputSpec, JobSpec
from harness.errors import TransportError
from harness.models import build, save
from harness.transport import RemotePathError, Session, Transport
from harness.transport.ssh import SshTransport
from tests.transport.conftest import Sshd, fingerprint, start_sshd, stop_sshd
from tests.transport.faultproxy import FaultProxy

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


def make(sshd: Sshd, tmp_path: Path, **kwargs: object) -> SshTransport:
    known = tmp_path / "known_hosts"
    if not known.exists() and kwargs.get("host_key_policy") != "accept-new":
        known.write_text(sshd.known_hosts_line())
    options: dict[str, object] = {
        "workdir": str(tmp_path / "board"),
        "key_file": sshd.client_key,
        "known_hosts": known,
        "user_known_hosts": None,
        "python": PY,
        "connect_timeout": 5.0,
        "retries": 2,
        "backoff_s": 0.1,
        **kwargs,
    }
    return SshTransport("127.0.0.1", sshd.port, sshd.user, **options)  # type: ignore[arg-type]


@pytest.fixture
def ssh(sshd: Sshd, tmp_path: Path) -> SshTransport:
    transport = make(sshd, tmp_path)
    yield transport  # type: ignore[misc]
    transport.close()


# --- commands ------------------------------------------------------------------------------------


def test_it_is_a_transport(ssh: SshTransport) -> None:
    assert isinstance(ssh, Transport)


def test_run_exit_status_and_cwd(ssh: SshTransport) -> None:
    done = ssh.run(
        [PY, "-c", "import os,sys; print(os.getcwd()); sys.stderr.write('e'); sys.exit(3)"],
        timeout=30,
    )
    assert done.returncode == 3
    assert done.stdout.decode().strip() == ssh.workdir
    assert done.stderr == b"e"


def test_run_with_stdin(ssh: SshTransport) -> None:
    done = ssh.run(
        [PY, "-c", "import sys; sys.stdout.write(sys.stdin.read().upper())"],
        timeout=30,
        stdin=b"abc" * 100000,
    )
    assert done.returncode == 0 and done.stdout == b"ABC" * 100000


def test_run_timeout_while_stdin_is_not_read(ssh: SshTransport) -> None:
    started = time.monotonic()
    with pytest.raises(TransportError, match="no exit within"):
        ssh.run([PY, "-c", "import time; time.sleep(30)"], timeout=1.0, stdin=b"x" * (64 << 20))
    assert time.monotonic() - started < 8


def test_run_timeout_kills(ssh: SshTransport, tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    code = f"import time; time.sleep(1.5); open({str(marker)!r}, 'w').close()"
    started = time.monotonic()
    with pytest.raises(TransportError, match="no exit within"):
        ssh.run([PY, "-c", code], timeout=0.5)
    assert time.monotonic() - started < 5
    time.sleep(2.0)
    assert not marker.exists()
    # The connection is still usable afterwards.
    assert ssh.run(["true"], timeout=10).returncode == 0
    assert ssh.connects == 1


def test_session_stream(ssh: SshTransport) -> None:
    session = ssh.open_session(
        [
            PY,
            "-u",
            "-c",
            "import sys\nfor line in sys.stdin:\n"
            "    sys.stdout.write(line.upper()); sys.stdout.flush(); sys.stderr.write('x')\n",
        ]
    )
    assert isinstance(session, Session)
    session.send(b"hello\n")
    got = b""
    while len(got) < 6:
        got += session.recv(100, timeout=10)
    assert got == b"HELLO\n"
    ended = session.close(timeout=5)
    assert ended.returncode == 0
    assert session.close() is ended


def test_session_recv_timeout_and_kill(ssh: SshTransport) -> None:
    session = ssh.open_session([PY, "-c", "import time; time.sleep(60)"])
    with pytest.raises(TransportError, match="nothing received"):
        session.recv(10, timeout=0.2)
    started = time.monotonic()
    ended = session.close(timeout=0.2)
    assert time.monotonic() - started < 5
    assert ended.returncode != 0


# --- files ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 100_000, 8 * 1024 * 1024])
def test_put_get_identical(ssh: SshTransport, tmp_path: Path, size: int) -> None:
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    ssh.put(src, "a/b/c.bin")
    assert ssh.exists("a/b/c.bin") and ssh.exists("a")
    assert (Path(ssh.workdir) / "a/b/c.bin").read_bytes() == data
    ssh.get("a/b/c.bin", tmp_path / "back" / "c.bin")
    assert (tmp_path / "back" / "c.bin").read_bytes() == data
    # No temporary files left behind.
    assert sorted(p.name for p in (Path(ssh.workdir) / "a/b").iterdir()) == ["c.bin"]


def test_get_missing_and_cleanup(ssh: SshTransport, tmp_path: Path) -> None:
    with pytest.raises(TransportError, match="no such file"):
        ssh.get("nope.bin", tmp_path / "x")
    (tmp_path / "f").write_bytes(b"1")
    ssh.put(tmp_path / "f", "d/e/f")
    ssh.cleanup("d")
    assert not ssh.exists("d")
    ssh.cleanup("d")  # missing is fine


@pytest.mark.parametrize("bad", ["../x", "/etc/passwd", "a/../../x", "", "a\\b", "a\x00b"])
def test_remote_paths_are_confined(ssh: SshTransport, tmp_path: Path, bad: str) -> None:
    (tmp_path / "f").write_bytes(b"1")
    for call in (
        lambda: ssh.put(tmp_path / "f", bad),
        lambda: ssh.get(bad, tmp_path / "g"),
        lambda: ssh.exists(bad),
        lambda: ssh.cleanup(bad),
    ):
        with pytest.raises(RemotePathError):
            call()


def test_shell_injection_in_paths_is_harmless(ssh: SshTransport, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    (tmp_path / "f").write_bytes(b"payload")
    names = [f"x; touch {canary}", f"$(touch {canary})", f"`touch {canary}`", "a b'c\"d", "-rf"]
    for name in names:
        ssh.put(tmp_path / "f", name)
        assert (Path(ssh.workdir) / name).read_bytes() == b"payload"
        assert ssh.exists(name)
        ssh.get(name, tmp_path / "g")
        ssh.cleanup(name)
        assert not ssh.exists(name)
    done = ssh.run(["echo", f"$(touch {canary})"], timeout=10)
    assert done.stdout.decode().strip() == f"$(touch {canary})"
    assert not canary.exists()


# --- host keys and authentication ----------------------------------------------------------------


def test_unknown_host_key_refused_with_fingerprint(sshd: Sshd, tmp_path: Path) -> None:
    (tmp_path / "known_hosts").write_text("")
    transport = make(sshd, tmp_path)
    fp = fingerprint(Path(f"{sshd.host_key}.pub"))
    with pytest.raises(TransportError, match="unknown host key") as info:
        transport.run(["true"], timeout=10)
    assert fp in str(info.value)
    assert (tmp_path / "known_hosts").read_text() == ""


def test_accept_new_records_the_key(sshd: Sshd, tmp_path: Path) -> None:
    known = tmp_path / "own" / "known_hosts"
    transport = make(sshd, tmp_path, host_key_policy="accept-new", known_hosts=known)
    assert transport.run(["true"], timeout=10).returncode == 0
    transport.close()
    assert sshd.host_pub in known.read_text()
    assert f"[127.0.0.1]:{sshd.port}" in known.read_text()
    # Now known: strict accepts it.
    strict = make(sshd, tmp_path, known_hosts=known)
    assert strict.run(["true"], timeout=10).returncode == 0
    strict.close()


def test_changed_host_key_refused_even_with_accept_new(sshd: Sshd, tmp_path: Path) -> None:
    from tests.transport.conftest import _keygen

    other = tmp_path / "other_host"
    _keygen(other)
    pub = " ".join(Path(f"{other}.pub").read_text().split()[:2])
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {pub}\n")
    fp = fingerprint(Path(f"{sshd.host_key}.pub"))
    for policy in ("strict", "accept-new"):
        transport = make(sshd, tmp_path, host_key_policy=policy)
        with pytest.raises(TransportError, match="changed") as info:
            transport.exists("x")
        assert fp in str(info.value)
    assert known.read_text() == f"[127.0.0.1]:{sshd.port} {pub}\n"


def test_wrong_client_key_refused(sshd: Sshd, tmp_path: Path) -> None:
    from tests.transport.conftest import _keygen

    wrong = tmp_path / "wrong"
    _keygen(wrong)
    transport = make(sshd, tmp_path, key_file=wrong)
    started = time.monotonic()
    with pytest.raises(TransportError, match="authentication refused"):
        transport.run(["true"], timeout=10)
    assert time.monotonic() - started < 10


# --- faults --------------------------------------------------------------------------------------


# paramiko's prefetch thread dies with the link it was reading from; that is the point here.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_cut_mid_transfer_recovers_or_fails_cleanly(sshd: Sshd, tmp_path: Path) -> None:
    proxy = FaultProxy(sshd.port)
    try:
        known = tmp_path / "known_hosts"
        known.write_text(f"[127.0.0.1]:{proxy.port} {sshd.host_pub}\n")
        transport = SshTransport(
            "127.0.0.1",
            proxy.port,
            sshd.user,
            workdir=str(tmp_path / "board"),
            key_file=sshd.client_key,
            known_hosts=known,
            user_known_hosts=None,
            connect_timeout=5,
            retries=3,
            backoff_s=0.1,
            keepalive_s=1,
        )
        data = np.random.default_rng(7).integers(0, 256, 4 << 20, dtype=np.uint8).tobytes()
        src = tmp_path / "src.bin"
        src.write_bytes(data)
        transport.put(src, "warm.bin")  # connected, SFTP open
        proxy.cut_after(1 << 20)  # mid-upload
        transport.put(src, "big.bin")
        assert proxy.cuts == 1 and transport.connects == 2
        assert (Path(transport.workdir) / "big.bin").read_bytes() == data
        # A cut during a download.
        proxy.cut_after(2000)  # the SFTP read requests themselves
        transport.get("big.bin", tmp_path / "back.bin")
        assert (tmp_path / "back.bin").read_bytes() == data
        assert proxy.cuts == 2 and transport.connects == 3
        # A link that keeps dropping: bounded retries, then TransportError, nothing half-written.
        transport.close()
        proxy.close()
        started = time.monotonic()
        with pytest.raises(TransportError):
            transport.put(src, "never.bin")
        assert time.monotonic() - started < 15
        assert not (Path(transport.workdir) / "never.bin").exists()
    finally:
        proxy.close()


def test_board_gone_fails_after_bounded_retries(tmp_path: Path, sshd: Sshd) -> None:
    process, info = start_sshd(tmp_path / "own-sshd", host_key=sshd.host_key)
    transport = make(info, tmp_path)
    try:
        assert transport.run(["true"], timeout=10).returncode == 0
        stop_sshd(process)
        # Stopping the listener leaves the established session's own sshd process alive, so
        # drop the connection as a reboot would; then every reconnect is refused.
        transport._drop()
        started = time.monotonic()
        with pytest.raises(TransportError, match="no connection after 3 attempts"):
            transport.run(["true"], timeout=10)
        assert time.monotonic() - started < 5
    finally:
        transport.close()
        if process.poll() is None:
            stop_sshd(process)


# --- the agent over SSH --------------------------------------------------------------------------


def test_agent_runs_a_sim_job_over_ssh(sshd: Sshd, tmp_path: Path) -> None:
    transport = make(sshd, tmp_path, env={"PYTHONPATH": str(ROOT)})
    model = save(build("conv1x1", (1, 3, 3, 5)), tmp_path / "model.onnx")
    x = np.random.default_rng(1).integers(0, 256, (1, 3, 3, 5), dtype=np.uint8)
    spec = JobSpec(
        job_id="ssh-one",
        adapter="sim",
        model=model,
        inputs=(InputSpec("input", "NCHW", (1, 3, 3, 5), "uint8"),),
        adapter_options={"target": "rk3562"},
        load_timeout_s=30,
        run_timeout_s=30,
    )
    try:
        with AgentClient(transport, scratch=tmp_path / "scratch") as client:
            result = client.submit(spec, {"input": x})
            assert result.ok, result
            assert result.outputs
            again = client.submit(spec, {"input": x})
            assert again.ok and again.timings.model_cached
        with AgentClient(transport, sessions=False, scratch=tmp_path / "scratch2") as client:
            assert client.submit(spec, {"input": x}).ok
        assert transport.connects == 1
        assert list((Path(transport.workdir) / "jobs").iterdir()) == []
    finally:
        transport.close()
