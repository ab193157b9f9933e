"""The emulated boards' tooling without an emulator: recipe keys, the cache folder, the launcher,
making a board from a root, and the CLI's answers when nothing is built. (The boards themselves
run in tox -e board-aarch64: tests/emulated.)"""

from __future__ import annotations

import dataclasses
import json
import stat
import zipfile
from pathlib import Path

import pytest

from npu_hil.harness.cli.main import main
from npu_hil_testkit.emulated import (
    DEFAULT_RECIPE,
    EmulatedRoot,
    EmulationError,
    cache_dir,
    find_root,
    make_board,
)
from npu_hil_testkit.emulated.recipe import host_mirror
from npu_hil_testkit.emulated.root import write_launcher


def test_the_key_changes_with_every_part_of_the_recipe() -> None:
    keys = {DEFAULT_RECIPE.key()}
    for change in (
        {"suite": "stable"},
        {"packages": (*DEFAULT_RECIPE.packages, "python3-yaml")},
        {"mirror": "http://127.0.0.1/debian"},
        {"links": ()},
        {"arch": "armhf"},
    ):
        keys.add(dataclasses.replace(DEFAULT_RECIPE, **change).key())  # type: ignore[arg-type]
    assert len(keys) == 6
    assert DEFAULT_RECIPE.key() == dataclasses.replace(DEFAULT_RECIPE).key()
    assert DEFAULT_RECIPE.key().startswith("arm64-oldstable-")


def test_cache_folder_is_private_and_follows_xdg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    folder = cache_dir()
    assert folder == tmp_path / "xdg" / "npu-hil"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "npu-hil"


def test_nothing_built_is_no_root_and_status_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert find_root() is None
    # A partial build (no root.json) is not a root either.
    (tmp_path / "npu-hil" / "roots" / DEFAULT_RECIPE.key() / "root").mkdir(parents=True)
    assert find_root() is None
    assert main(["simfarm", "arm64-root", "status", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["built"] is False
    assert main(["simfarm", "arm64-root", "path"]) == 1


def test_launcher_runs_the_roots_python_under_qemu(tmp_path: Path) -> None:
    path = write_launcher(
        tmp_path / "launch-python",
        root=tmp_path / "r",
        qemu="qemu-aarch64",
        pycache=tmp_path / "pyc",
        cpu="cortex-a76",
    )
    text = path.read_text()
    assert path.stat().st_mode & 0o111
    assert "unset PYTHONPATH" in text and "PYTHONHOME=/usr" in text
    assert f"PYTHONPYCACHEPREFIX={tmp_path / 'pyc'}" in text
    assert (
        f'qemu-aarch64 -cpu cortex-a76 -L {tmp_path / "r"} {tmp_path / "r/usr/bin/python3"} "$@"'
        in text
    )


def fake_root(tmp_path: Path) -> EmulatedRoot:
    folder = tmp_path / "roots" / "k"
    (folder / "root/usr/lib").mkdir(parents=True)
    (folder / "root/usr/lib/shared.txt").write_text("root")
    return EmulatedRoot(folder, DEFAULT_RECIPE.to_dict(), 1.0, "3.11.2", "1.24.2")


def wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_a_board_is_the_root_plus_its_own_files(tmp_path: Path) -> None:
    root = fake_root(tmp_path)
    vendor = wheel(tmp_path / "v-1.0-py3-none-any.whl", {"vendor/__init__.py": b"X = 1\n"})
    board = make_board(
        root,
        tmp_path / "b",
        files={"/proc/device-tree/compatible": b"rockchip,rk3588\0", "/usr/lib/shared.txt": b"b"},
        wheels=[vendor],
        cpu="cortex-a76",
    )
    assert (board.root / "proc/device-tree/compatible").read_bytes() == b"rockchip,rk3588\0"
    assert (board.root / "usr/local/lib/python3.11/dist-packages/vendor/__init__.py").exists()
    # A board file replaces the root's hard-linked one instead of writing through it.
    assert (board.root / "usr/lib/shared.txt").read_text() == "b"
    assert (root.root / "usr/lib/shared.txt").read_text() == "root"
    assert str(board.root) in board.python.read_text()
    again = make_board(
        root,
        tmp_path / "b",
        files={"/proc/device-tree/compatible": b"rockchip,rk3588\0", "/usr/lib/shared.txt": b"b"},
        wheels=[vendor],
        cpu="cortex-a76",
    )
    assert again.key == board.key
    other = make_board(root, tmp_path / "b", files={"/proc/device-tree/compatible": b"x\0"})
    assert other.key != board.key
    assert not (other.root / "usr/local/lib/python3.11/dist-packages/vendor").exists()


@pytest.mark.parametrize("member", ["../evil.py", "/abs.py"])
def test_a_wheel_cannot_write_outside_site_packages(tmp_path: Path, member: str) -> None:
    bad = wheel(tmp_path / "bad-1.0-py3-none-any.whl", {member: b""})
    with pytest.raises(EmulationError, match="refusing the member"):
        make_board(fake_root(tmp_path), tmp_path / "b", wheels=[bad])


def test_board_files_must_be_absolute_paths_inside(tmp_path: Path) -> None:
    with pytest.raises(EmulationError, match="absolute path inside the board"):
        make_board(fake_root(tmp_path), tmp_path / "b", files={"etc/x": b""})


def test_the_mirror_is_the_one_this_machines_apt_reads(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://127.0.0.1/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\n# a comment: with a colon\nURIs: http://127.0.0.1/debian\n"
        "Suites: bookworm bookworm-updates\nComponents: main\n"
    )
    assert host_mirror(tmp_path) == "http://127.0.0.1/debian"
    (tmp_path / "sources.list.d" / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text(
        "deb http://127.0.0.1/sec bookworm-security main\n"
        "deb [arch=amd64] http://127.0.0.1/d bookworm main\n"
    )
    assert host_mirror(tmp_path) == "http://127.0.0.1/d"
    (tmp_path / "sources.list").unlink()
    assert host_mirror(tmp_path) is None
    # The mirror is part of the key: another mirror is another root.
    assert dataclasses.replace(DEFAULT_RECIPE, mirror="http://127.0.0.1/d").key() != (
        dataclasses.replace(DEFAULT_RECIPE, mirror="http://127.0.0.1/e").key()
    )
