"""SshTransport against a real OpenSSH sshd on 127.0.0.1 (started by the ``sshd`` fixture)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport import RemotePathError, Stream
from npu_hil.harness.transport.ssh import SshTransport
from npu_hil.harness.transport.ssh import files as ssh_stream
from tests.agent.jobs import sim_job
from tests.transport.conftest import Sshd, fingerprint, start_sshd, stop_sshd
from tests.transport.faultproxy import Direction, FaultProxy

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

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
def ssh(sshd: Sshd, tmp_path: Path) -> Iterator[SshTransport]:
    transport = make(sshd, tmp_path)
    yield transport
    transport.close()


# Both transfer paths: small files over SFTP with a read-back, or (readback_max=0) every
# non-empty file streamed over an exec channel and hashed by the board's sha256sum.
MODES = {"sftp": 8 << 20, "stream": 0}


@pytest.fixture(params=sorted(MODES))
def either(request: pytest.FixtureRequest, sshd: Sshd, tmp_path: Path) -> Iterator[SshTransport]:
    transport = make(sshd, tmp_path, readback_max=MODES[request.param])
    yield transport
    transport.close()


def random_file(path: Path, size: int, seed: int = 0) -> bytes:
    data = np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()
    path.write_bytes(data)
    return data


def outside_with_secret(tmp_path: Path) -> Path:
    """A directory beside the board's workdir, holding a file that must survive."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"keep me")
    return outside


# --- commands (what every transport does: tests/transport/contract) ------------------------------


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
    session = ssh.open_stream(
        [
            PY,
            "-u",
            "-c",
            "import sys\nfor line in sys.stdin:\n"
            "    sys.stdout.write(line.upper()); sys.stdout.flush(); sys.stderr.write('x')\n",
        ]
    )
    assert isinstance(session, Stream)
    session.send(b"hello\n")
    got = b""
    while len(got) < 6:
        got += session.recv(100, timeout=10)
    assert got == b"HELLO\n"
    ended = session.close(timeout=5)
    assert ended.returncode == 0
    assert session.close() is ended


def test_session_recv_timeout_and_kill(ssh: SshTransport) -> None:
    session = ssh.open_stream([PY, "-c", "import time; time.sleep(60)"])
    with pytest.raises(TransportError, match="nothing received"):
        session.recv(10, timeout=0.2)
    started = time.monotonic()
    ended = session.close(timeout=0.2)
    assert time.monotonic() - started < 5
    assert ended.returncode != 0


# --- files ---------------------------------------------------------------------------------------


# Smaller files (0, 1, 100,000 bytes): the contract suite. 8 MiB goes the streamed way.
@pytest.mark.parametrize("size", [8 * 1024 * 1024])
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


def test_shell_injection_in_paths_is_harmless(either: SshTransport, tmp_path: Path) -> None:
    canary = tmp_path / "canary"  # what the injected commands would remove
    canary.mkdir()
    (canary / "keep").write_bytes(b"1")
    marker = tmp_path / "marker"  # what they would create
    (tmp_path / "f").write_bytes(b"payload")
    names = [
        f"x; rm -rf {canary}; touch {marker}",
        f"$(rm -rf {canary})",
        f"`touch {marker}`",
        f"line\nrm -rf {canary}\ntouch {marker}\n",
        f"'; rm -rf {canary}; '",
        f'"; rm -rf {canary}; "',
        "a b'c\"d",
        "-rf",
        "*",
        "$HOME",
    ]
    for name in names:
        either.put(tmp_path / "f", name)
        assert (Path(either.workdir) / name).read_bytes() == b"payload"
        assert either.exists(name)
        either.get(name, tmp_path / "g")
        assert (tmp_path / "g").read_bytes() == b"payload"
        either.cleanup(name)
        assert not either.exists(name)
    done = either.run(["echo", f"$(touch {marker})"], timeout=10)
    assert done.stdout.decode().strip() == f"$(touch {marker})"
    assert not marker.exists()
    assert (canary / "keep").read_bytes() == b"1"
    assert not [p for p in Path(either.workdir).rglob("*") if p.name.endswith(".tmp")]


# --- the stream commands on a board's shells ------------------------------------------------------


def board_bin(tmp_path: Path, shell: str, hasher: str) -> Path:
    """A PATH with only what the stream commands may use: busybox's applets, or this machine's
    /bin/sh (dash on Debian) and coreutils; openssl or not."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tools = ["sh", "tee", "cat", "sha256sum"]
    for tool in tools:
        found = shutil.which("busybox") if shell == "busybox" else shutil.which(tool)
        if found is None:
            pytest.skip(f"{shell if shell == 'busybox' else tool} is not installed")
        (bin_dir / tool).symlink_to(found)
    if hasher == "openssl":
        openssl = shutil.which("openssl")
        if openssl is None:
            pytest.skip("openssl is not installed")
        (bin_dir / "openssl").symlink_to(openssl)
    return bin_dir


@pytest.mark.parametrize("hasher", ["openssl", "sha256sum"])
@pytest.mark.parametrize("shell", ["sh", "busybox"])
def test_stream_commands_on_posix_shells(tmp_path: Path, shell: str, hasher: str) -> None:
    bin_dir = board_bin(tmp_path, shell, hasher)

    def board(command: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [str(bin_dir / "sh"), "-c", command],
            input=stdin,
            capture_output=True,
            env={"PATH": str(bin_dir)},
            timeout=60,
            check=False,
        )

    data = random_file(tmp_path / "src", 3 << 20, seed=5)
    sha = hashlib.sha256(data).hexdigest()
    path = str(tmp_path / "it's $(a)\n`b`; c.bin")
    up = board(ssh_stream.upload_command(path), data)
    assert up.returncode == 0, up.stderr
    ssh_stream.check_tee(up.stdout, "put", up.stderr)
    assert ssh_stream.parse_digest(up.stdout, "put") == sha
    assert Path(path).read_bytes() == data
    down = board(ssh_stream.download_command(path))
    assert down.returncode == 0, down.stderr
    assert down.stdout == data
    assert ssh_stream.parse_digest(down.stderr, "get") == sha
    # Failures are the board's answer, in words.
    failed = board(ssh_stream.upload_command(str(tmp_path / "no" / "dir")), data)
    with pytest.raises(TransportError, match="writing the file on the board failed"):
        ssh_stream.check_tee(failed.stdout, "put", failed.stderr)
    assert board(ssh_stream.download_command(str(tmp_path / "missing"))).returncode != 0


# --- symlinks ------------------------------------------------------------------------------------


def every_call(
    transport: SshTransport, path: str, src: Path, dest: Path
) -> dict[str, Callable[[], object]]:
    """Each file operation of the transport on ``path``, ready to call."""
    return {
        "put": lambda: transport.put(src, path),
        "get": lambda: transport.get(path, dest),
        "exists": lambda: transport.exists(path),
        "cleanup": lambda: transport.cleanup(path),
    }


def test_symlinks_out_of_the_workdir_are_refused(either: SshTransport, tmp_path: Path) -> None:
    outside = outside_with_secret(tmp_path)
    board = Path(either.workdir)
    board.mkdir(parents=True)
    (board / "evil").symlink_to(outside)  # absolute, to a directory
    (board / "leak").symlink_to(outside / "secret")  # to a file
    (board / "sub").mkdir()
    (board / "sub" / "up").symlink_to("../../outside")  # relative, one level down
    src = tmp_path / "f"
    random_file(src, 4096)
    for path in ("evil/secret", "evil/new", "evil/d/new", "leak", "sub/up/secret", "evil"):
        for name, call in every_call(either, path, src, tmp_path / "got").items():
            with pytest.raises(RemotePathError, match=re.escape(repr(path))) as info:
                call()
            assert "outside the workdir" in str(info.value), name
    assert sorted(os.listdir(outside)) == ["secret"]
    assert (outside / "secret").read_bytes() == b"keep me"
    assert not (tmp_path / "got").exists()
    # A link is harmless inside a tree being removed: rm -rf unlinks it, the target stays.
    either.cleanup("sub")
    assert not (board / "sub").exists()
    assert (outside / "secret").read_bytes() == b"keep me"


def test_symlinks_inside_the_workdir_are_followed(sshd: Sshd, tmp_path: Path) -> None:
    # The workdir itself may not be a link (test_board_workdir): links inside it are fine.
    real = tmp_path / "board"
    (real / "data").mkdir(parents=True)
    (real / "alias").symlink_to("data")
    (real / "abs").symlink_to(tmp_path / "board" / "data")  # absolute, into the workdir
    (real / "gone").symlink_to("nowhere/x")  # dangling: nothing to reach through it
    transport = make(sshd, tmp_path)
    try:
        data = random_file(tmp_path / "src", 4096)
        transport.put(tmp_path / "src", "alias/f.bin")
        assert (real / "data" / "f.bin").read_bytes() == data
        (real / "file").symlink_to("data/f.bin")
        for path in ("abs/f.bin", "file"):
            assert transport.exists(path)
            transport.get(path, tmp_path / "back")
            assert (tmp_path / "back").read_bytes() == data
        assert not transport.exists("gone")
        transport.cleanup("gone")
        assert not (real / "gone").is_symlink()
        transport.cleanup("alias/f.bin")
        assert not (real / "data" / "f.bin").exists()
    finally:
        transport.close()


def test_directory_checks_are_cached_and_forgotten(
    ssh: SshTransport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = outside_with_secret(tmp_path)
    src = tmp_path / "f"
    random_file(src, 100)
    ssh.put(src, "a/b/c/one")
    sftp = ssh._sftp_client()
    calls: list[str] = []
    for name in ("lstat", "normalize"):
        original = getattr(sftp, name)

        def counted(
            path: str, _name: str = name, _original: Callable[[str], object] = original
        ) -> object:
            calls.append(_name)
            return _original(path)

        monkeypatch.setattr(sftp, name, counted)
    ssh.put(src, "a/b/c/two")
    assert calls == ["lstat"]  # the file itself; its directories were checked by the first put
    # A removed directory is checked again: it may come back as a link.
    ssh.cleanup("a/b")
    (Path(ssh.workdir) / "a" / "b").symlink_to(outside)
    with pytest.raises(RemotePathError, match="'a/b/c/three'"):
        ssh.put(src, "a/b/c/three")
    assert sorted(os.listdir(outside)) == ["secret"]


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


@pytest.fixture
def proxy(sshd: Sshd) -> Iterator[FaultProxy]:
    proxy = FaultProxy(sshd.port)
    yield proxy
    proxy.close()


def through(proxy: FaultProxy, sshd: Sshd, tmp_path: Path, **kwargs: object) -> SshTransport:
    """A transport to the sshd through the fault proxy, with short timeouts and backoff."""
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{proxy.port} {sshd.host_pub}\n")
    options: dict[str, object] = {
        "workdir": str(tmp_path / "board"),
        "key_file": sshd.client_key,
        "known_hosts": known,
        "user_known_hosts": None,
        "python": PY,
        "connect_timeout": 5,
        "retries": 3,
        "backoff_s": 0.1,
        "keepalive_s": 1,
        "io_timeout": 3.0,
        **kwargs,
    }
    return SshTransport("127.0.0.1", proxy.port, sshd.user, **options)  # type: ignore[arg-type]


# paramiko's prefetch thread dies with the link it was reading from; that is the point here.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_cut_mid_transfer_recovers_or_fails_cleanly(
    proxy: FaultProxy, sshd: Sshd, tmp_path: Path
) -> None:
    transport = through(proxy, sshd, tmp_path)
    data = random_file(tmp_path / "src.bin", 4 << 20, seed=7)
    src = tmp_path / "src.bin"
    transport.put(src, "warm.bin")  # connected, SFTP open
    proxy.cut_after(1 << 20)  # mid-upload
    transport.put(src, "big.bin")
    assert proxy.cuts == 1 and transport.connects == 2
    assert (Path(transport.workdir) / "big.bin").read_bytes() == data
    # A cut during a download: counted in the bytes coming back.
    proxy.cut_after(1 << 20, "down")
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


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("mode", sorted(MODES))
def test_latency_and_a_short_stall_deliver_identical_bytes(
    proxy: FaultProxy, sshd: Sshd, tmp_path: Path, mode: str
) -> None:
    transport = through(proxy, sshd, tmp_path, readback_max=MODES[mode], io_timeout=5.0)
    data = random_file(tmp_path / "src.bin", 3 << 20, seed=11)
    proxy.latency(0.01)
    assert transport.run(["true"], timeout=30).returncode == 0
    proxy.stall_after(1 << 20, 1.0, "up")  # shorter than io_timeout: waited out
    transport.put(tmp_path / "src.bin", "big.bin")
    assert (Path(transport.workdir) / "big.bin").read_bytes() == data
    proxy.stall_after(1 << 20, 1.0, "down")
    transport.get("big.bin", tmp_path / "back.bin")
    assert (tmp_path / "back.bin").read_bytes() == data
    assert proxy.stalls == 2 and transport.connects == 1
    transport.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_stall_past_io_timeout_reconnects_then_gives_up(
    proxy: FaultProxy, sshd: Sshd, tmp_path: Path, mode: str
) -> None:
    transport = through(proxy, sshd, tmp_path, readback_max=MODES[mode], io_timeout=1.0)
    data = random_file(tmp_path / "src.bin", 3 << 20, seed=12)
    transport.put(tmp_path / "src.bin", "big.bin")
    # Once: the stalled connection is given up after io_timeout and the transfer repeated.
    proxy.stall_after(1 << 20, 4.0, "down")
    transport.get("big.bin", tmp_path / "back.bin")
    assert (tmp_path / "back.bin").read_bytes() == data
    assert transport.connects == 2
    transport.close()
    # On every connection: bounded retries, then TransportError, nothing half-written.
    failing = through(proxy, sshd, tmp_path, readback_max=MODES[mode], io_timeout=1.0, retries=1)
    for direction, call, never in give_up_cases(failing, tmp_path):
        proxy.clear()
        proxy.stall_after(1 << 20, 60.0, direction, every=True)
        started = time.monotonic()
        with pytest.raises(TransportError, match="link lost 2 times"):
            call()
        assert time.monotonic() - started < 15
        assert not never.exists()
    proxy.clear()
    failing.get("big.bin", tmp_path / "back.bin")  # the link is fine again
    assert (tmp_path / "back.bin").read_bytes() == data
    failing.close()


def give_up_cases(
    transport: SshTransport, tmp_path: Path
) -> list[tuple[Direction, Callable[[], object], Path]]:
    """A download and an upload of ``big.bin``, each with the direction its data flows in and
    the destination that must not appear when it fails."""
    board = Path(transport.workdir)
    return [
        ("down", lambda: transport.get("big.bin", tmp_path / "never.bin"), tmp_path / "never.bin"),
        ("up", lambda: transport.put(tmp_path / "src.bin", "never.bin"), board / "never.bin"),
    ]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("mode", sorted(MODES))
def test_corruption_is_caught_by_the_mac_and_never_delivered(
    proxy: FaultProxy, sshd: Sshd, tmp_path: Path, mode: str
) -> None:
    transport = through(proxy, sshd, tmp_path, readback_max=MODES[mode])
    board = Path(transport.workdir)
    data = random_file(tmp_path / "src.bin", 3 << 20, seed=13)
    transport.put(tmp_path / "src.bin", "big.bin")
    # One flipped bit: SSH's MAC refuses the packet, the connection drops, the transfer is
    # repeated on a new one and delivers the same bytes.
    proxy.corrupt_after(1 << 20, "down")
    transport.get("big.bin", tmp_path / "back.bin")
    assert (tmp_path / "back.bin").read_bytes() == data
    proxy.corrupt_after(1 << 20, "up")
    transport.put(tmp_path / "src.bin", "again.bin")
    assert (board / "again.bin").read_bytes() == data
    assert proxy.flips == 2 and transport.connects == 3
    transport.close()
    # Corruption on every connection (at a byte offset, or at random at a rate): TransportError
    # after bounded retries, never a damaged file.
    failing = through(proxy, sshd, tmp_path, readback_max=MODES[mode], retries=1)
    arms: list[Callable[[], None]] = [
        lambda: proxy.corrupt_rate(1e-5, "down"),
        lambda: proxy.corrupt_after(1 << 20, "up", every=True),
    ]
    for (direction, call, never), arm in zip(give_up_cases(failing, tmp_path), arms, strict=True):
        proxy.clear()
        arm()
        with pytest.raises(TransportError):
            call()
        assert not never.exists(), direction
    assert (board / "big.bin").read_bytes() == data  # what was there is untouched
    failing.close()


def test_board_that_reboots_within_the_backoff_budget(
    proxy: FaultProxy, sshd: Sshd, tmp_path: Path
) -> None:
    # retries=4, backoff 0.1 s: after the first failure the transfer waits 0.1 s, then its
    # reconnect tries at +0, +0.1, +0.3, +0.7 and +1.5 s: a budget of about 1.6 s.
    transport = through(proxy, sshd, tmp_path, retries=4, backoff_s=0.1)
    data = random_file(tmp_path / "src.bin", 100_000, seed=14)
    transport.put(tmp_path / "src.bin", "a.bin")
    proxy.refuse_for(0.5)
    started = time.monotonic()
    transport.put(tmp_path / "src.bin", "b.bin")
    assert time.monotonic() - started >= 0.5
    assert transport.connects == 2
    assert (Path(transport.workdir) / "b.bin").read_bytes() == data
    # Down for longer than the budget: TransportError once it is spent, before the board is
    # back; the next call after that reconnects.
    proxy.refuse_for(3.0)
    started = time.monotonic()
    with pytest.raises(TransportError, match="no connection after 5 attempts"):
        transport.put(tmp_path / "src.bin", "c.bin")
    assert time.monotonic() - started < 3.0
    time.sleep(max(0.0, started + 3.3 - time.monotonic()))
    transport.put(tmp_path / "src.bin", "c.bin")
    assert (Path(transport.workdir) / "c.bin").read_bytes() == data
    transport.close()


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
    spec, inputs = sim_job(tmp_path, "ssh-one", "rk3562")
    try:
        with AgentClient(transport) as client:
            result = client.submit(spec, inputs)
            assert result.ok, result
            assert result.outputs
            again = client.submit(spec, inputs)
            assert again.ok and again.timings.model_cached
        with AgentClient(transport, resident=False) as client:
            assert client.submit(spec, inputs).ok
        assert transport.connects == 1
        assert list((Path(transport.workdir) / "jobs").glob("*")) == []
    finally:
        transport.close()
