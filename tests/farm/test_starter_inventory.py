"""The starting inventory: what ``npu-hil inventory init`` writes, the plugin's built-in
simulated farm, and the repository's own ``inventory.yaml`` are one text."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from npu_hil.harness.farm.inventory import load_inventory
from npu_hil.harness.farm.starter import (
    BUILTIN_SOURCE,
    InventoryExistsError,
    builtin_inventory,
    starter_inventory_text,
    write_starter_inventory,
)
from npu_hil.targets.registry import VENDOR_OF

REPO = Path(__file__).resolve().parents[2]


def npu_hil(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "npu_hil.harness.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_builtin_farm_has_one_simulated_local_board_per_target() -> None:
    inventory = builtin_inventory()
    assert inventory.source == BUILTIN_SOURCE
    assert sorted(b.target for b in inventory.boards) == sorted(VENDOR_OF)
    assert all(b.simulated and b.transport.kind == "local" for b in inventory.boards)
    assert {b.vendor for b in inventory.boards} == {"kneron", "rockchip", "horizon"}


def test_the_repository_inventory_is_the_starting_inventory() -> None:
    """Regenerate with ``npu-hil inventory init --force`` when a target is added."""
    assert (REPO / "inventory.yaml").read_text(encoding="utf-8") == starter_inventory_text()


@pytest.mark.slow
def test_init_writes_a_commented_inventory_that_reads_back(tmp_path: Path) -> None:
    result = npu_hil("inventory", "init", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "15 simulated boards" in result.stdout
    written = tmp_path / "inventory.yaml"
    text = written.read_text(encoding="utf-8")
    assert "key_file" in text and "password_env" in text  # the real-board lines, as comments
    boards = load_inventory(written).boards
    assert [b.name for b in boards] == [b.name for b in builtin_inventory().boards]


@pytest.mark.slow
def test_init_keeps_an_existing_file_unless_forced(tmp_path: Path) -> None:
    target = tmp_path / "farm" / "lab.yaml"
    target.parent.mkdir()
    target.write_text("mine\n", encoding="utf-8")
    result = npu_hil("inventory", "init", "--path", str(target), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "already exists" in result.stderr
    assert target.read_text(encoding="utf-8") == "mine\n"
    forced = npu_hil("inventory", "init", "--path", str(target), "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert target.read_text(encoding="utf-8") == starter_inventory_text()


def test_init_never_writes_through_a_link(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep\n", encoding="utf-8")
    link = tmp_path / "inventory.yaml"
    link.symlink_to(elsewhere)
    with pytest.raises(InventoryExistsError, match="regular file"):
        write_starter_inventory(link, force=True)
    assert elsewhere.read_text(encoding="utf-8") == "keep\n"


@pytest.mark.slow
def test_check_lists_the_boards_and_names_a_bad_line(tmp_path: Path) -> None:
    good = npu_hil("inventory", "check", str(REPO / "inventory.yaml"), cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    assert "15 boards" in good.stdout and "rk3588-01" in good.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("boards:\n  - {name: x-01, target: rk9999}\n", encoding="utf-8")
    result = npu_hil("inventory", "check", str(bad), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"npu-hil: error: {bad}:2:")
    assert "Traceback" not in result.stderr
