"""Small files over SFTP with their requests sent together
(:mod:`npu_hil.harness.transport.ssh.files`), against a real OpenSSH sshd: the bytes, the
read-back, and how many answers the transport waits for one by one."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.ssh import SshTransport
from npu_hil.harness.transport.ssh import files as sftp_pipeline
from tests.transport.conftest import Sshd
from tests.transport.test_ssh import make

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e


@pytest.fixture
def ssh(sshd: Sshd, tmp_path: Path) -> Iterator[SshTransport]:
    transport = make(sshd, tmp_path)
    yield transport
    transport.close()


def waits(ssh: SshTransport, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The SFTP requests the transport sends and waits for one at a time, by type."""
    sftp: Any = ssh._sftp_client()
    seen: list[int] = []
    original: Callable[..., Any] = sftp._request

    def counted(t: int, *args: Any) -> Any:
        seen.append(t)
        return original(t, *args)

    monkeypatch.setattr(sftp, "_request", counted)
    return seen


@pytest.mark.parametrize("size", [0, 1, 32768, 32769, 300_000])
def test_put_and_get_wait_for_three_answers_and_move_the_same_bytes(
    ssh: SshTransport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    data = os.urandom(size)
    (tmp_path / "in.bin").write_bytes(data)
    ssh.put(tmp_path / "in.bin", "d/first.bin")  # the folder made and checked
    seen = waits(ssh, monkeypatch)
    ssh.put(tmp_path / "in.bin", "d/f.bin")
    # lstat of the file (the symlink guard), open, then the rename once the read-back matched:
    # the writes, the fstat, the read-back and the close went out together.
    assert len(seen) == 3
    seen.clear()
    ssh.get("d/f.bin", tmp_path / "out.bin")
    assert len(seen) == 2  # lstat, open; both reads, the fstat and the close together
    assert (Path(ssh.workdir) / "d" / "f.bin").read_bytes() == data
    assert (tmp_path / "out.bin").read_bytes() == data
    assert sorted(os.listdir(Path(ssh.workdir) / "d")) == ["f.bin", "first.bin"]


def test_a_read_back_that_differs_is_refused(
    ssh: SshTransport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "in.bin").write_bytes(b"x" * 5000)
    put = sftp_pipeline.put_pipelined

    def damaged(sftp: Any, data: bytes, tmp: str) -> tuple[int, str]:
        size, _ = put(sftp, data, tmp)
        return size, "0" * 64

    monkeypatch.setattr(sftp_pipeline, "put_pipelined", damaged)
    with pytest.raises(TransportError, match="landed as 5000 bytes sha256 0000"):
        ssh.put(tmp_path / "in.bin", "bad.bin")
    assert not (Path(ssh.workdir) / "bad.bin").exists()
    assert [n for n in os.listdir(ssh.workdir) if n.endswith(".tmp")] == []


def test_a_short_read_falls_back_to_sequential_reads(
    ssh: SshTransport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = os.urandom(70_000)
    (Path(ssh.workdir)).mkdir(parents=True, exist_ok=True)
    (Path(ssh.workdir) / "f.bin").write_bytes(data)

    def short(*args: Any) -> Any:
        raise sftp_pipeline.ShortRead

    monkeypatch.setattr(sftp_pipeline, "get_pipelined", short)
    ssh.get("f.bin", tmp_path / "out.bin")
    assert (tmp_path / "out.bin").read_bytes() == data
