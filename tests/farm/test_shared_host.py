"""The farm on a host shared with other users: its folders are its own, and a folder another user
prepared is refused, never used. The other user is real: a second uid (``nobody``, reached with
``setpriv``) pre-creates the folders, as a local attacker on a lab host would."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.errors import UnsafeFolderError
from npu_hil.harness.farm import Farm, parse_inventory
from npu_hil.harness.folders import default_workdir, private_dir
from npu_hil.harness.transport import LocalTransport
from npu_hil_testkit.simfarm import SimFarmError, up

NOBODY = 65534
BOARD = "kl730-sim"
INVENTORY = f"""\
boards:
  - name: {BOARD}
    target: kl730
    backend: sim
    transport: local
"""
REAL_AGENT = Path(__file__).resolve().parents[2] / "npu_hil" / "harness" / "board"


def as_nobody(*argv: str) -> None:
    """Run ``argv`` as the second user (uid and gid 65534, no supplementary groups)."""
    done = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder like ``/tmp``: every user may create entries (mode 1777)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("a second user needs root and setpriv")
    folder = Path(tempfile.mkdtemp(prefix="npu-hil-shared-"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def own_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shared_tmp: Path) -> Path:
    """This user's cache folder in ``tmp_path``, and ``$TMPDIR`` the shared folder."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(shared_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(shared_tmp))
    return tmp_path / "cache"


def plant_agent(shared_tmp: Path, workdir: Path) -> Path:
    """As the other user: pre-create ``workdir`` (mode 0777) with a deployed agent bundle whose
    entry (``__main__.py``) leaves a mark and then runs the real agent, so the host would see
    nothing wrong. Returns the mark's path: it must never appear."""
    stage = Path(tempfile.mkdtemp(dir=shared_tmp, prefix="stage-"))
    agent_path = AgentClient(LocalTransport(stage / "board")).deploy()  # the bundle's own name
    mark = shared_tmp / "executed-as"
    (stage / "board" / agent_path / "__main__.py").write_text(
        "import os, runpy, sys\n"
        f"open({str(mark)!r}, 'a').write(str(os.geteuid()))\n"
        f"sys.argv[0] = {str(REAL_AGENT)!r}\n"
        f"runpy.run_path({str(REAL_AGENT)!r}, run_name='__main__')\n"
    )
    for path in [stage, *stage.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    sim = workdir / "boards" / BOARD / "sim"
    as_nobody(
        "sh",
        "-c",
        f'mkdir -p "{sim}" && cp -R "{stage}/board/agent" "{sim}/" && chmod -R a+rwX "{workdir}"',
    )
    assert workdir.stat().st_uid == NOBODY
    return mark


@pytest.mark.slow
def test_another_users_workdir_at_the_old_default_name_is_never_used(
    own_env: Path, shared_tmp: Path
) -> None:
    """The old default, ``$TMPDIR/npu-hil-<uid>``, pre-created by another user with an agent of
    theirs in it: the farm no longer looks there, and nothing of theirs runs."""
    mark = plant_agent(shared_tmp, shared_tmp / f"npu-hil-{os.getuid()}")
    with Farm(parse_inventory(INVENTORY, source="farm.yaml")) as farm:
        health = farm.health(BOARD)
        assert not mark.exists(), f"another user's agent ran as uid {mark.read_text()}"
        assert health.ok, health.error
        assert farm.workdir == own_env / "npu-hil"
    assert stat.S_IMODE((own_env / "npu-hil").stat().st_mode) == 0o700


def test_another_users_workdir_is_refused_with_owner_and_mode(shared_tmp: Path) -> None:
    workdir = shared_tmp / "npu-hil-work"
    mark = plant_agent(shared_tmp, workdir)
    with pytest.raises(UnsafeFolderError, match=f"owner uid {NOBODY}, mode 0777"):
        Farm(parse_inventory(INVENTORY, source="farm.yaml"), workdir=workdir)
    assert not mark.exists()


def test_a_board_folder_another_user_made_is_refused(shared_tmp: Path) -> None:
    """The workdir is ours but a board's folder in it is not (made while it was open)."""
    workdir = private_dir(shared_tmp / "work")
    workdir.chmod(0o755)  # readable by others is fine; writable is not
    boards = private_dir(workdir / "boards")
    boards.chmod(0o777)  # a careless moment is all another user needs
    as_nobody("mkdir", str(boards / BOARD))
    boards.chmod(0o700)
    with Farm(parse_inventory(INVENTORY, source="farm.yaml"), workdir=workdir) as farm:
        health = farm.health(BOARD)
    assert not health.ok and f"owner uid {NOBODY}" in (health.error or "")


def test_another_users_simfarm_folder_is_refused(shared_tmp: Path) -> None:
    folder = shared_tmp / "simfarm"
    as_nobody("mkdir", "-m", "777", str(folder))
    with pytest.raises(SimFarmError, match=f"owner uid {NOBODY}"):
        up(folder, targets=["kl730"], boards=1, transports=["ssh"])
    assert list(folder.iterdir()) == []


# --- the folders themselves, as this user ---------------------------------------------------


def test_private_dir_creates_every_missing_folder_0700(tmp_path: Path) -> None:
    made = private_dir(tmp_path / "a" / "b" / "c")
    for folder in (tmp_path / "a", tmp_path / "a" / "b", made):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


@pytest.mark.parametrize("how", ["symlink", "0777", "0770", "file", "parent-0777"])
def test_private_dir_refuses_what_is_not_ours_alone(tmp_path: Path, how: str) -> None:
    target = tmp_path / "work"
    if how == "symlink":
        (tmp_path / "real").mkdir()
        target.symlink_to(tmp_path / "real")
        phrase = "symbolic link"
    elif how == "file":
        target.write_text("")
        phrase = "not a folder"
    elif how == "parent-0777":
        (tmp_path / "open").mkdir()
        (tmp_path / "open").chmod(0o777)
        target = tmp_path / "open" / "work"
        phrase = "without the sticky bit"
    else:
        target.mkdir()
        target.chmod(int(how, 8))
        phrase = f"mode {how}"
    with pytest.raises(UnsafeFolderError, match=phrase):
        private_dir(target)


def test_the_default_workdir_is_in_this_users_own_folders(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_workdir() == runtime / "npu-hil"
    runtime.chmod(0o755)  # not a private runtime folder: not used
    assert default_workdir() == tmp_path / "cache" / "npu-hil"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # ignored, as the spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_workdir() == tmp_path / "home" / ".cache" / "npu-hil"
    assert not str(default_workdir()).startswith(tempfile.gettempdir() + "/npu-hil-")


def test_the_farm_default_workdir_is_not_a_shared_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with Farm(parse_inventory(INVENTORY, source="farm.yaml")) as farm:
        assert farm.workdir == tmp_path / "cache" / "npu-hil"
        assert stat.S_IMODE(farm.workdir.stat().st_mode) == 0o700


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
