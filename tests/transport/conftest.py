"""Fixtures for the transport tests."""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# ================================================================================================
# SSH: a real OpenSSH sshd on 127.0.0.1 (owned by the SSH transport tests)
# ================================================================================================

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


@dataclass
class Sshd:
    """A running sshd and the material to reach it."""

    port: int
    user: str
    host_key: Path  # private ed25519 host key
    host_pub: str  # "ssh-ed25519 AAAA..." line
    client_key: Path  # private key in authorized_keys
    root: Path

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.host_pub}\n"


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        timeout=30,
        capture_output=True,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_sshd(root: Path, host_key: Path | None = None) -> tuple[subprocess.Popen[bytes], Sshd]:
    """Start sshd in ``root`` (keys generated there unless given); wait until it accepts."""
    if not os.access(SSHD, os.X_OK) or shutil.which("ssh-keygen") is None:
        pytest.skip("OpenSSH sshd/ssh-keygen not installed (apt-get install openssh-server)")
    root.mkdir(parents=True, exist_ok=True)
    if host_key is None:
        host_key = root / "host_ed25519"
        _keygen(host_key)
    client_key = root / "client_ed25519"
    if not client_key.exists():
        _keygen(client_key)
    authorized = root / "authorized_keys"
    authorized.write_text(Path(f"{client_key}.pub").read_text())
    # Privilege separation wants this directory when sshd runs as root.
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    sftp = next(
        (
            p
            for p in (
                "/usr/lib/openssh/sftp-server",
                "/usr/libexec/openssh/sftp-server",
                "/usr/libexec/sftp-server",
            )
            if os.path.exists(p)
        ),
        "internal-sftp",
    )
    port = _free_port()
    config = root / "sshd_config"
    config.write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {host_key}\n"
        f"AuthorizedKeysFile {authorized}\nPidFile {root / 'sshd.pid'}\n"
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
        f"Subsystem sftp {sftp}\nMaxStartups 50\nMaxSessions 50\nLogLevel ERROR\n"
    )
    # The log goes to a file, not a pipe: an unread pipe could fill and stall sshd.
    log = root / "sshd.log"
    with log.open("ab") as log_stream:
        process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=log_stream,
            stderr=log_stream,
        )
    deadline = time.monotonic() + 10
    while True:
        if process.poll() is not None:
            pytest.skip(f"sshd did not start: {log.read_text(errors='replace').strip()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.settimeout(2)
                if sock.recv(4).startswith(b"SSH-"):
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            process.wait(5)
            pytest.skip("sshd did not accept connections within 10 s")
        time.sleep(0.05)
    info = Sshd(
        port=port,
        user=getpass.getuser(),
        host_key=host_key,
        host_pub=" ".join(Path(f"{host_key}.pub").read_text().split()[:2]),
        client_key=client_key,
        root=root,
    )
    return process, info


def fingerprint(public_key_file: Path) -> str:
    """``SHA256:...`` as ``ssh-keygen -l`` prints it: the independent reference."""
    out = subprocess.run(
        ["ssh-keygen", "-lf", str(public_key_file)],
        check=True,
        timeout=30,
        capture_output=True,
        text=True,
    )
    return out.stdout.split()[1]


def stop_sshd(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    process, info = start_sshd(tmp_path_factory.mktemp("sshd"))
    try:
        yield info
    finally:
        stop_sshd(process)


# ================================================================================================
# end of the SSH section
# ================================================================================================


# ================================================================================================
# Serial: a real shell on a pseudo-terminal via socat (owned by the serial transport tests)
# ================================================================================================

import contextlib  # noqa: E402
import random  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402

SOCAT = shutil.which("socat")

# A fake board on the far side of the console: a boot log, an optional login, then a shell; when
# the shell dies the board "reboots" (prints a new boot log). A boot limit keeps a board whose
# pty went away from looping. The shells run without job control (+m): a job-control shell would
# take the terminal's foreground group with it when it dies, and the next one would stop on
# SIGTTIN; the trap lets ^C reach the running command without ending the board.
BOARD_SCRIPT = r"""
trap ':' INT
boots=0
while [ $boots -lt 5 ]; do
  boots=$((boots+1))
  printf '[    0.000000] Booting Linux on physical CPU 0x0 (boot %d)\r\n' $boots
  printf '[    0.120000] npu-fake: NPU ready\r\n'
  if [ -n "$BOARD_USER" ]; then
    while :; do
      printf 'fakeboard login: '
      read -r u || exit 0
      printf 'Password: '
      stty -echo; read -r p || exit 0; stty echo; printf '\r\n'
      [ "$u" = "$BOARD_USER" ] && [ "$p" = "$BOARD_PASSWORD" ] && break
      printf 'Login incorrect\r\n'
    done
  fi
  /bin/sh +m -i
done
"""


@dataclass
class SerialBoard:
    """A socat-served console: ``tty`` is the device path the transport opens."""

    tty: Path
    root: Path
    process: subprocess.Popen[bytes]


def start_serial_board(root: Path, *, user: str = "", password: str = "") -> SerialBoard:
    if SOCAT is None:
        pytest.skip("socat is not installed (apt-get install socat)")
    root.mkdir(parents=True, exist_ok=True)
    script = root / "board.sh"
    script.write_text(BOARD_SCRIPT, encoding="utf-8")
    tty = root / "tty"
    # PYTHONPATH: the sim adapter on this fake board imports the harness, as on the SSH board.
    env = {
        **os.environ,
        "BOARD_USER": user,
        "BOARD_PASSWORD": password,
        "PS1": "$ ",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    process = subprocess.Popen(
        [
            SOCAT,
            f"PTY,link={tty},raw,echo=0",
            f"EXEC:/bin/sh {script},pty,stderr,setsid,ctty,sigint,sane",
        ],
        env=env,
        cwd=root,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while not tty.exists():
        if time.monotonic() > deadline or process.poll() is not None:
            stop_serial_board(process)
            raise RuntimeError("socat did not create the console pty")
        time.sleep(0.02)
    return SerialBoard(tty, root, process)


def stop_serial_board(process: subprocess.Popen[bytes]) -> None:
    # socat closes the pty master on exit, which hangs up the board's session (SIGHUP).
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)


@pytest.fixture
def serial_board(tmp_path: Path) -> Iterator[SerialBoard]:
    board = start_serial_board(tmp_path / "board")
    yield board
    stop_serial_board(board.process)


@pytest.fixture
def serial_login_board(tmp_path: Path) -> Iterator[SerialBoard]:
    board = start_serial_board(tmp_path / "board", user="tester", password="s3cret pw")
    yield board
    stop_serial_board(board.process)


SER2NET = shutil.which("ser2net") or (
    "/usr/sbin/ser2net" if Path("/usr/sbin/ser2net").exists() else None
)


@pytest.fixture
def ser2net_url(serial_board: SerialBoard) -> Iterator[str]:
    """The board's console served by ser2net as RFC 2217 on 127.0.0.1; the URL has no
    ``ign_set_control``, as a user would write it."""
    if SER2NET is None:
        pytest.skip("ser2net is not installed (apt-get install ser2net)")
    port = _free_port()
    config = serial_board.root / "ser2net.yaml"
    config.write_text(
        "connection: &board\n"
        f"  accepter: telnet(rfc2217),tcp,127.0.0.1,{port}\n"
        "  enable: on\n"
        f"  connector: serialdev,{serial_board.tty},115200n81,local\n",
        encoding="utf-8",
    )
    process = subprocess.Popen(
        [SER2NET, "-n", "-c", str(config), "-P", str(serial_board.root / "ser2net.pid")],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            with socket.socket() as probe:
                probe.settimeout(0.5)
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline or process.poll() is not None:
                pytest.fail("ser2net did not start listening")
            time.sleep(0.05)
        yield f"rfc2217://127.0.0.1:{port}"
    finally:
        stop_serial_board(process)


class NoisyRelay:
    """A serial bridge with line noise: a TCP listener (the transport connects with
    ``socket://``) relayed to the board's pty, flipping a bit in a byte with probability
    ``flip_rate`` and dropping a byte with probability ``drop_rate``, in both directions, from a
    seeded generator so a run is reproducible. A flip that would produce a terminal control
    character sets the top bit instead: a ^C or ^D typed by noise tests the tty's line
    discipline, not the transport."""

    def __init__(self, tty: Path, *, flip_rate: float, drop_rate: float, seed: int = 1) -> None:
        self.flip_rate, self.drop_rate = flip_rate, drop_rate
        self.rng = random.Random(seed)
        self.flipped = self.dropped = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = int(self.listener.getsockname()[1])
        self.tty_fd = os.open(tty, os.O_RDWR | os.O_NOCTTY)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    def _noise(self, data: bytes) -> bytes:
        out = bytearray()
        for byte in data:
            if self.rng.random() < self.drop_rate:
                self.dropped += 1
                continue
            if self.rng.random() < self.flip_rate:
                self.flipped += 1
                flipped = byte ^ (1 << self.rng.randrange(7))
                byte = flipped if 0x20 <= flipped < 0x7F or flipped == 0x0A else byte | 0x80
            out.append(byte)
        return bytes(out)

    def _run(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
                break
            except OSError:
                continue
        else:
            return
        with conn:
            while not self.stop.is_set():
                ready, _, _ = select.select([conn.fileno(), self.tty_fd], [], [], 0.1)
                try:
                    if conn.fileno() in ready:
                        data = conn.recv(65536)
                        if not data:
                            return
                        os.write(self.tty_fd, self._noise(data))
                    if self.tty_fd in ready:
                        conn.sendall(self._noise(os.read(self.tty_fd, 65536)))
                except OSError:
                    return

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.listener.close()
        os.close(self.tty_fd)


# ================================================================================================
# end of the serial section
# ================================================================================================
