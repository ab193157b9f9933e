"""The board workdir is checked before anything is deployed into it, over a real sshd and a real
serial console on this machine: one another user of the board controls (owned by them, mode
0777 like a shared ``/tmp/npu-hil``, a symlink) is refused with its owner and mode named, and a
missing one is created private."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from npu_hil.harness.errors import TransportError, UnsafeFolderError
from npu_hil.harness.transport.workdir import check_workdir_probe, mode_from_ls
from tests.transport.conftest import SerialBoard, Sshd
from tests.transport.test_serial import make as make_serial
from tests.transport.test_ssh import make as make_ssh

NOBODY = 65534


def spoil(workdir: Path, how: str, tmp_path: Path) -> str:
    """Pre-create the workdir as another user or a careless one would; the phrase the refusal
    must contain."""
    if how == "0777":
        workdir.mkdir()
        workdir.chmod(0o777)
        return "mode 0777"
    if how == "other-owner":
        if os.geteuid() != 0:
            pytest.skip("giving a folder to another user needs root")
        workdir.mkdir()
        os.chown(workdir, NOBODY, NOBODY)
        return f"owner uid {NOBODY}"
    assert how == "symlink"
    (tmp_path / "elsewhere").mkdir()
    workdir.symlink_to(tmp_path / "elsewhere")
    return "symbolic link"


HOW = ["0777", "other-owner", "symlink"]


@pytest.mark.parametrize("how", HOW)
def test_ssh_refuses_a_workdir_another_user_controls(sshd: Sshd, tmp_path: Path, how: str) -> None:
    phrase = spoil(tmp_path / "board", how, tmp_path)
    transport = make_ssh(sshd, tmp_path)
    try:
        with pytest.raises(UnsafeFolderError, match=phrase) as caught:
            transport.put(Path(__file__), "agent/agent.py")
        assert "board workdir" in caught.value.message and "ssh " in caught.value.message
    finally:
        transport.close()
    assert not list((tmp_path / "board").rglob("agent.py"))


@pytest.mark.parametrize("how", HOW)
def test_serial_refuses_a_workdir_another_user_controls(
    serial_board: SerialBoard, tmp_path: Path, how: str
) -> None:
    phrase = spoil(tmp_path / "remote", how, tmp_path)
    with pytest.raises(UnsafeFolderError, match=phrase):
        make_serial(serial_board, tmp_path)
    assert not list((tmp_path / "remote").rglob("*"))


def test_a_missing_ssh_workdir_is_created_private(sshd: Sshd, tmp_path: Path) -> None:
    transport = make_ssh(sshd, tmp_path)
    try:
        transport.put(Path(__file__), "x.py")
        assert stat.S_IMODE(Path(transport.workdir).stat().st_mode) == 0o700
    finally:
        transport.close()


def test_a_missing_serial_workdir_is_created_private(
    serial_board: SerialBoard, tmp_path: Path
) -> None:
    with make_serial(serial_board, tmp_path) as transport:
        assert stat.S_IMODE(Path(transport.workdir).stat().st_mode) == 0o700


def test_ls_mode_fields() -> None:
    assert mode_from_ls("drwxrwxrwt") == stat.S_IFDIR | 0o1777
    assert mode_from_ls("drwx------") == stat.S_IFDIR | 0o700
    assert mode_from_ls("lrwxrwxrwx") == stat.S_IFLNK | 0o777
    assert mode_from_ls("drwsr-S--T") == stat.S_IFDIR | 0o4000 | 0o2000 | 0o1000 | 0o740
    for bad in ("", "drwx", "?rwxrwxrwx", "dabcdefghi"):
        with pytest.raises(ValueError):
            mode_from_ls(bad)


def test_a_probe_answer_that_cannot_be_read_is_a_transport_error() -> None:
    for answer in (b"", b"0\n", b"root\ndrwx------ 2 0 0 40 Dec 1 00:00 /w\n"):
        with pytest.raises(TransportError, match="cannot tell who owns"):
            check_workdir_probe("/w", answer, "ssh b")
    check_workdir_probe("/w", b"0\ndrwx------ 2 0 0 40 Dec 1 00:00 /w\n", "ssh b")
    with pytest.raises(UnsafeFolderError, match="owner uid 7, mode 0755"):
        check_workdir_probe("/w", b"0\ndrwxr-xr-x 2 7 7 40 Dec 1 00:00 /w\n", "ssh b")
