"""Fixtures for the transport tests: the simulated farm's pieces (:mod:`npu_hil_testkit.simfarm`),
one at a time. A program that is not installed here skips the tests that need it."""

from __future__ import annotations

import os
import random
import select
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from npu_hil_testkit.simfarm import (
    MissingToolError,
    SerialBoard,
    SimFarmError,
    Sshd,
    fingerprint,
    start_ser2net,
    stop_serial_board,
)
from npu_hil_testkit.simfarm import console as _console
from npu_hil_testkit.simfarm import sshd as _sshd
from npu_hil_testkit.simfarm.procs import free_port as _free_port
from npu_hil_testkit.simfarm.sshd import keygen as _keygen

__all__ = [
    "NoisyRelay",
    "SerialBoard",
    "Sshd",
    "_free_port",
    "_keygen",
    "fingerprint",
    "start_serial_board",
    "start_sshd",
    "stop_serial_board",
    "stop_sshd",
]

# ================================================================================================
# SSH: a real OpenSSH sshd on 127.0.0.1 (owned by the SSH transport tests)
# ================================================================================================


def start_sshd(root: Path, host_key: Path | None = None) -> tuple[subprocess.Popen[bytes], Sshd]:
    """Start sshd in ``root`` (keys generated there unless given); wait until it accepts. An
    sshd that is missing or cannot start here skips the test."""
    try:
        return _sshd.start_sshd(root, host_key)
    except SimFarmError as exc:
        pytest.skip(exc.message)


def stop_sshd(process: subprocess.Popen[bytes]) -> None:
    _sshd.stop_sshd(process)


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


def start_serial_board(root: Path, *, user: str = "", password: str = "") -> SerialBoard:
    """A fake board's console on a pty (see :data:`npu_hil_testkit.simfarm.BOARD_SCRIPT`)."""
    try:
        return _console.start_serial_board(root, user=user, password=password)
    except MissingToolError as exc:
        pytest.skip(exc.message)


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


@pytest.fixture
def ser2net_url(serial_board: SerialBoard) -> Iterator[str]:
    """The board's console served by ser2net as RFC 2217 on 127.0.0.1; the URL has no
    ``ign_set_control``, as a user would write it."""
    try:
        served = start_ser2net(serial_board.tty, serial_board.root)
    except MissingToolError as exc:
        pytest.skip(exc.message)
    try:
        yield served.url
    finally:
        stop_serial_board(served.process)


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
