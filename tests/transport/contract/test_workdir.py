"""The board workdir is checked before anything is deployed into it, on every transport of the
contract (``kind``): one another user of the board controls (owned by them, mode 0777 like a
shared ``/tmp/npu-hil``, a symlink) is refused with its owner and mode named, and a missing one
is created private."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from npu_hil.harness.errors import UnsafeFolderError
from tests.transport.contract.conftest import open_transport

# pyserial 3.5's rfc2217 client (the ser2net kind) still calls Thread.setDaemon/setName.
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore:set(Daemon|Name).. is deprecated:DeprecationWarning"),
]
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
def test_a_workdir_another_user_controls_is_refused(
    request: pytest.FixtureRequest, kind: str, tmp_path: Path, how: str
) -> None:
    workdir = tmp_path / "remote"
    phrase = spoil(workdir, how, tmp_path)
    # SSH asks when it first connects, serial when it opens, local when it is made.
    with (
        pytest.raises(UnsafeFolderError, match=phrase) as caught,
        open_transport(request, kind, workdir) as transport,
    ):
        transport.put(Path(__file__), "agent/agent.py")
    if kind != "local":
        assert "board workdir" in caught.value.message
    assert not list(workdir.rglob("*"))


def test_a_missing_workdir_is_created_private(
    request: pytest.FixtureRequest, kind: str, tmp_path: Path
) -> None:
    with open_transport(request, kind, tmp_path / "remote") as transport:
        transport.put(Path(__file__), "x.py")
        assert stat.S_IMODE(Path(transport.workdir).stat().st_mode) == 0o700
