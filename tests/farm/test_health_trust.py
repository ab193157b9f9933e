"""Board health is the state of one inventory and of this user: two projects on the built-in
farm never share a board's state; a health folder or file another local user owns or may write
is not believed (a second user made with setpriv writes them); a damaged file (a FIFO, a bomb, a
device) reads as unknown with why, at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from npu_hil.harness.farm.health_store import (
    BAD,
    UNKNOWN,
    HealthStore,
    health_folder,
    state_key,
)
from npu_hil.harness.farm.starter import BUILTIN_SOURCE
from tests.damage import plant
from tests.second_user import NOBODY, as_nobody, reachable_folder


def test_two_projects_on_the_built_in_farm_keep_their_own_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NPU_HIL_HEALTH_DIR", raising=False)  # as a farm keeps it by default
    one, two = tmp_path / "one", tmp_path / "two"
    keys = {state_key(BUILTIN_SOURCE, one), state_key(BUILTIN_SOURCE, two)}
    assert len(keys) == 2
    work = tmp_path / "farm"
    first = HealthStore(health_folder(work, state_key(BUILTIN_SOURCE, one)))
    second = HealthStore(health_folder(work, state_key(BUILTIN_SOURCE, two)))
    first.record("rk3588-01", BAD, "circuit breaker opened", cause="x")
    assert first.read("rk3588-01").state == BAD
    assert second.read("rk3588-01").state == UNKNOWN  # another project's board, same name
    # One inventory file is one state wherever it is named from.
    inventory = one / "inventory.yaml"
    assert state_key("inventory.yaml", one) == state_key(str(inventory), two)


def test_npu_hil_health_lists_the_state_of_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NPU_HIL_HEALTH_DIR", raising=False)
    work = tmp_path / "farm"
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    HealthStore(health_folder(work, state_key(BUILTIN_SOURCE, one))).record(
        "rk3588-01", BAD, "circuit breaker opened", cause="dead"
    )
    env = {k: v for k, v in os.environ.items() if k != "NPU_HIL_HEALTH_DIR"}

    def health(cwd: Path) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "npu_hil.harness.cli.main", "health"]
        cmd += ["--workdir", str(work), "--json"]
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)

    mine, theirs = health(one), health(two)
    assert mine.returncode == 1 and json.loads(mine.stdout)["rk3588-01"]["state"] == BAD
    assert theirs.returncode == 0, theirs.stderr
    assert json.loads(theirs.stdout)["rk3588-01"]["state"] == UNKNOWN


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder a second local user can reach (pytest's own tmp folders are private)."""
    with reachable_folder("npu-hil-trust-", 0o755) as made:
        yield made


def test_a_shared_health_folder_is_not_believed(open_folder: Path) -> None:
    shared = open_folder / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # a folder every local user may write: not ours to trust
    as_nobody(
        "sh", "-c", f'echo \'{{"schema": 1, "state": "good"}}\' > {shared}/rk3588-01.health.json'
    )
    found = HealthStore(shared).read("rk3588-01")
    assert found.state == UNKNOWN and found.problem.startswith("not trusted: ")
    assert "writable by group or others" in found.problem or "uid" in found.problem


def test_a_file_of_another_user_in_our_folder_is_not_believed(tmp_path: Path) -> None:
    folder = tmp_path / "health"
    folder.mkdir(mode=0o700)
    kept = HealthStore(folder)
    kept.record("rk3588-01", BAD, "circuit breaker opened", cause="dead")
    os.chown(kept.path("rk3588-01"), NOBODY, NOBODY)  # as if another user had replaced it
    found = kept.read("rk3588-01")
    assert found.state == UNKNOWN and f"owned by uid {NOBODY}" in found.problem


@pytest.mark.parametrize("how", ["fifo", "deep", "dev-zero", "huge-number", "folder"])
def test_a_damaged_health_file_is_unknown_at_once(tmp_path: Path, how: str) -> None:
    kept = HealthStore(tmp_path / "health")
    kept.record("rk3588-01", BAD, "check", cause="x")
    path = kept.path("rk3588-01")
    plant(path, how)
    found = kept.read("rk3588-01")
    assert found.state == UNKNOWN and found.problem and str(path) in found.problem
