"""Reading the board's answer to the workdir probe (its ``ls -ldn`` line). The refusal of a
workdir another user controls, and the creation of a missing one, are held on every transport
by the contract suite (tests/transport/contract/test_workdir.py)."""

from __future__ import annotations

import stat

import pytest

from npu_hil.harness.errors import TransportError, UnsafeFolderError
from npu_hil.harness.transport.workdir import check_workdir_probe, mode_from_ls


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
