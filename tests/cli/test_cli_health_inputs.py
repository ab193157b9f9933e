"""``npu-hil health`` on what it did not write: a damaged health file (nested 100,000 deep, a
symlink to /dev/zero, a FIFO, a number past a float, a folder) is one named warning line and the
board reads as unknown, never a traceback or a hang; a health folder another user owns or may
write (a second local user made with setpriv), or a workdir that is a FIFO or a device, is
exit 2 and one line."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_bad_inputs import Outcome, preload, run_case

from tests.second_user import NOBODY, as_nobody, reachable_folder

TIMEOUT_S = 30.0


@pytest.fixture(autouse=True)
def _preloaded() -> None:
    preload()


def health(
    cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str, health_dir: Path | None = None
) -> Outcome:
    """``npu-hil health`` in a forked child, with this environment and a timeout (a FIFO read
    without a bound shows as a hang): its exit status and stderr."""
    if health_dir is None:
        monkeypatch.delenv("NPU_HIL_HEALTH_DIR", raising=False)
    else:
        monkeypatch.setenv("NPU_HIL_HEALTH_DIR", str(health_dir))
    return run_case(["health", *args], cwd=cwd, timeout=TIMEOUT_S)


DAMAGED = {
    "rk3588-01": "deep",
    "rk3568-01": "dev-zero",
    "rv1106-01": "fifo",
    "rk3576-01": "huge-float",
    "rk3562-01": "huge-int",
    "kl730-01": "folder",
}


def test_damaged_health_files_are_one_named_warning_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "health"
    folder.mkdir(mode=0o700)
    for board, how in DAMAGED.items():
        path = folder / f"{board}.health.json"
        if how == "deep":
            path.write_text("[" * 100_000 + "]" * 100_000)
        elif how == "dev-zero":
            path.symlink_to("/dev/zero")
        elif how == "fifo":
            os.mkfifo(path, 0o600)
        elif how == "huge-float":
            path.write_text('{"schema": 1, "state": "bad", "since": 1e400}')
        elif how == "huge-int":
            path.write_text('{"schema": 1, "state": "bad", "since": 1' + "0" * 5000 + "}")
        else:
            path.mkdir()
    listed = health(tmp_path, monkeypatch, health_dir=folder)
    assert not listed.hung and not listed.traceback, listed.stderr
    assert listed.code == 0, listed.stderr  # none read as the "bad" some of them say
    assert len(listed.lines) == len(DAMAGED), listed.stderr
    for board in DAMAGED:
        (line,) = [w for w in listed.lines if w.startswith(f"npu-hil: warning: {board}: ")]
        assert str(folder / f"{board}.health.json") in line


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder a second local user can write in, as in /tmp (sticky: nobody renames another's
    entries); pytest's own tmp folders are private."""
    with reachable_folder("npu-hil-health-cli-", 0o1777) as made:
        yield made


BAD_BOARD = '{"schema": 1, "state": "bad", "since": "2026-12-01T00:00:00Z", "cause": "planted"}'


def test_a_health_folder_others_may_write_is_refused_in_one_line(
    open_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = open_folder / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    listed = health(tmp_path, monkeypatch, health_dir=shared)  # even with nothing in it yet
    assert listed.typed and "writable by group or others" in listed.stderr, listed.stderr
    # Another user's files in it decide nothing either.
    as_nobody("sh", "-c", f"echo '{BAD_BOARD}' > {shared}/rk3588-01.health.json")
    listed = health(tmp_path, monkeypatch, health_dir=shared)
    assert listed.typed and listed.stderr.startswith("npu-hil: error: "), listed.stderr


def test_a_health_folder_of_another_user_is_refused_in_one_line(
    open_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = open_folder / "theirs"
    as_nobody("sh", "-c", f"mkdir -m 700 {theirs} && echo '{BAD_BOARD}' > {theirs}/x")
    listed = health(tmp_path, monkeypatch, health_dir=theirs)
    assert listed.typed and "owned by another user" in listed.stderr, listed.stderr


def test_a_health_file_of_another_user_in_our_folder_is_a_named_warning(
    open_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    as_nobody("sh", "-c", f"echo '{BAD_BOARD}' > {open_folder}/planted")
    ours = tmp_path / "health"
    ours.mkdir(mode=0o700)
    shutil.move(open_folder / "planted", ours / "rk3588-01.health.json")  # keeps its owner
    listed = health(tmp_path, monkeypatch, health_dir=ours)
    assert listed.code == 0, listed.stderr  # a planted "bad" decides nothing
    (line,) = listed.lines
    assert line.startswith("npu-hil: warning: rk3588-01: ") and f"uid {NOBODY}" in line


@pytest.mark.parametrize("workdir", ["fifo", "/dev/zero", "file"])
def test_a_workdir_that_is_no_folder_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workdir: str
) -> None:
    if workdir == "fifo":
        os.mkfifo(tmp_path / "fifo")
    elif workdir == "file":
        (tmp_path / "file").write_text("x")
    listed = health(tmp_path, monkeypatch, "--workdir", workdir)
    assert listed.typed and listed.stderr.startswith("npu-hil: error: "), listed.stderr
