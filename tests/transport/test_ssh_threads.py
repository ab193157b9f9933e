"""One SshTransport used from several threads at once (a farm's parallel close, a user's thread
pool): every operation gives its own right answer, none waits on another's, and a link cut
while they run is one reconnect for all of them, against a real OpenSSH sshd on 127.0.0.1."""

from __future__ import annotations

import concurrent.futures
import hashlib
from pathlib import Path

import pytest

from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.ssh import SshTransport
from tests.transport.conftest import Sshd
from tests.transport.faultproxy import FaultProxy
from tests.transport.test_ssh import MODES, make, proxy, random_file, through

__all__ = ["proxy"]  # the fixture, used here

pytestmark = pytest.mark.e2e

THREADS = 8
ROUNDS = 6
DEADLINE_S = 120.0


def _work(transport: SshTransport, tmp_path: Path, number: int) -> list[str]:
    """put, exists, run (the board hashes the file), get and cleanup, ROUNDS times: what went
    wrong, if anything. A command the link was lost under is a TransportError that says so
    (commands are not repeated: one may have run), counted as ``interrupted``."""
    wrong = []
    for round_ in range(ROUNDS):
        name = f"t{number}-{round_}.bin"
        src = tmp_path / f"src-{name}"
        data = random_file(src, 64 * 1024 + number * 4099 + round_, seed=number * 100 + round_)
        transport.put(src, name)
        if not transport.exists(name):
            wrong.append(f"{name}: not there after put")
        try:
            done = transport.run(["sha256sum", f"{transport.workdir}/{name}"], timeout=30.0)
        except TransportError as exc:
            wrong.append(f"interrupted: {exc}")
        else:
            said = done.stdout.decode().split()[0] if done.stdout else ""
            if done.returncode != 0 or said != hashlib.sha256(data).hexdigest():
                wrong.append(f"{name}: the board hashed {said!r} ({done.returncode})")
        back = tmp_path / f"back-{name}"
        transport.get(name, back)
        if back.read_bytes() != data:
            wrong.append(f"{name}: came back different")
        transport.cleanup(name)
        if transport.exists(name):
            wrong.append(f"{name}: still there after cleanup")
    return wrong


def _all_threads(transport: SshTransport, tmp_path: Path) -> list[str]:
    pool = concurrent.futures.ThreadPoolExecutor(THREADS)
    try:
        futures = [pool.submit(_work, transport, tmp_path, n) for n in range(THREADS)]
        done, pending = concurrent.futures.wait(futures, timeout=DEADLINE_S)
        assert not pending, (
            f"{len(pending)} of {THREADS} threads still waiting after {DEADLINE_S} s"
        )
        return [problem for future in done for problem in future.result()]
    finally:
        # A hung thread fails the test, never hangs it.
        pool.shutdown(wait=False, cancel_futures=True)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_threads_share_one_transport(sshd: Sshd, tmp_path: Path, mode: str) -> None:
    transport = make(sshd, tmp_path, readback_max=MODES[mode])
    try:
        assert _all_threads(transport, tmp_path) == []
        assert transport.connects == 1  # one connection for every thread
    finally:
        transport.close()


def test_a_link_cut_under_threads_reconnects_for_all(
    proxy: FaultProxy, sshd: Sshd, tmp_path: Path
) -> None:
    transport = through(proxy, sshd, tmp_path)
    try:
        random_file(tmp_path / "warm", 10)
        transport.put(tmp_path / "warm", "warm.bin")  # connected, SFTP open
        proxy.cut_after(2 << 20)  # in the middle of the threads' traffic
        problems = _all_threads(transport, tmp_path)
        # File operations are repeated over the new connection; a command in flight is lost
        # with a TransportError that says so, at most one per thread; nothing else is wrong.
        interrupted = [p for p in problems if p.startswith("interrupted: ")]
        assert problems == interrupted and len(interrupted) <= THREADS, problems
        assert proxy.cuts == 1
        # One reconnect serves every thread: none drops the connection another just made.
        assert transport.connects == 2
    finally:
        transport.close()
