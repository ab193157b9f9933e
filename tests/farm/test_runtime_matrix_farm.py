"""A board's ``adapter_options`` and ``runtimes`` in the inventory, and a farm on one runtime:
the options reach every job, the boards without the runtime are left out, and a simulated board
that stands in for a runtime version is held to the vendor's compatibility table like a real
one (librknnrt 1.5.0 refuses rknn-toolkit2 2.5.0's file format 6; 2.5.0 takes it)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.errors import CompatibilityError, NpuHilError
from npu_hil.harness.farm import Farm
from npu_hil.harness.farm.inventory import InventoryError, parse_inventory
from npu_hil.harness.farm.selection import runtime_names, runtime_problem
from npu_hil.harness.pipeline import run_model

DATA = Path(__file__).resolve().parents[1] / "data" / "artifacts" / "rockchip"
INVENTORY = """\
manifest: m.json
boards:
  - name: rk3588-01
    target: rk3588
    runtimes:
      "1.5.0": {runtime_versions: {api_version: "1.5.0 (e6fe0c678@2023-05-25)"}}
      "2.5.0": {runtime_versions: {api_version: "2.5.0 (74ea630ce@2026-09-29)"}}
  - {name: rk3566-01, target: rk3566}
"""
X = {"input": np.random.default_rng(0).integers(0, 255, (1, 3, 4, 8)).astype(np.uint8)}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name in ("probe-rk3588-i8.rknn", "probe.onnx"):
        shutil.copy(DATA / name, tmp_path / name)
    manifest = {
        "version": 1,
        "models": {
            "conv3x3": {"onnx": "probe.onnx", "artifacts": {"rk3588": "probe-rk3588-i8.rknn"}}
        },
    }
    (tmp_path / "m.json").write_text(json.dumps(manifest))
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    return tmp_path


def farm_on(folder: Path, runtime: str | None) -> Iterator[Farm]:
    with Farm(folder / "inventory.yaml", workdir=folder / "work", runtime=runtime) as farm:
        yield farm


def test_options_and_runtimes_are_read_with_their_positions() -> None:
    inventory = parse_inventory(
        "boards:\n"
        "  - name: a\n"
        "    target: rk3588\n"
        "    backend: hw\n"
        "    transport: {kind: ssh, host: 127.0.0.1}\n"
        "    adapter_options: {core_mask: 0_1_2, library: /opt/rt/librknnrt.so, flags: 3}\n"
        "    runtimes:\n"
        "      '1.6.0': {library: /opt/rt-1.6.0/librknnrt.so}\n"
        "      stable:\n"
    )
    (board,) = inventory.boards
    # YAML 1.1 reads 0_1_2 as a number; an adapter's option keeps it as written.
    assert board.adapter_options == {
        "core_mask": "0_1_2",
        "library": "/opt/rt/librknnrt.so",
        "flags": 3,
    }
    assert board.options_for("1.6.0")["library"] == "/opt/rt-1.6.0/librknnrt.so"
    assert board.options_for("stable") == board.adapter_options
    assert runtime_names(inventory) == ["1.6.0", "stable"]
    with pytest.raises(InventoryError, match=r"a: no runtime '2\.0' \(the board has: 1\.6\.0, "):
        board.options_for("2.0")


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("runtimes: [1.6.0]", r":4:15: boards\[0\]\.runtimes: expected a mapping of runtime"),
        ("runtimes: {'bad name': {}}", r":4:16: boards\[0\]\.runtimes: expected a runtime name"),
        ("runtimes: {'1.6.0': 7}", r":4:25: boards\[0\]\.runtimes\.1\.6\.0: expected a mapping"),
        ("adapter_options: {9x: 1}", r"boards\[0\]\.adapter_options: expected an option name"),
        ("adapter_options: {a: {b: {c: {d: 1}}}}", r"at most 4 levels deep"),
    ],
)
def test_a_bad_entry_names_its_place(entry: str, expected: str) -> None:
    text = f"boards:\n  - name: a\n    target: rk3588\n    {entry}\n"
    with pytest.raises(InventoryError, match=expected):
        parse_inventory(text, source="farm.yaml")


def test_a_runtime_no_board_has_is_refused(folder: Path) -> None:
    with pytest.raises(NpuHilError, match=r"runtime '9\.9': no board .* \(runtimes there: 1\.5"):
        Farm(folder / "inventory.yaml", workdir=folder / "work", runtime="9.9")
    inventory = parse_inventory(INVENTORY, source="inv.yaml")
    assert runtime_problem(inventory, None) is None
    assert runtime_problem(inventory, "2.5.0") is None
    assert "its runtimes: 1.5.0, 2.5.0" in str(runtime_problem(inventory, "9.9"))


def test_a_farm_on_a_runtime_leaves_out_the_boards_without_it(folder: Path) -> None:
    for farm in farm_on(folder, "1.5.0"):
        assert [b.name for b in farm.boards()] == ["rk3588-01"]
        options = farm.session("rk3588-01").adapter_options
        assert options["runtime_versions"]["api_version"].startswith("1.5.0")
    for farm in farm_on(folder, None):
        assert [b.name for b in farm.boards()] == ["rk3588-01", "rk3566-01"]
        assert "runtime_versions" not in farm.session("rk3588-01").adapter_options


@pytest.mark.slow
def test_a_simulated_runtime_version_is_held_to_the_table(folder: Path) -> None:
    for farm in farm_on(folder, "1.5.0"):
        with pytest.raises(CompatibilityError) as caught:
            run_model(farm.session("rk3588-01"), "conv3x3", X)
        message = caught.value.message
        assert "built by toolkit 2.5.0 for rk3588" in message and "runtime 1.5.0" in message
        assert "refuses the model's file format" in message
    for farm in farm_on(folder, "2.5.0"):
        run = run_model(farm.session("rk3588-01"), "conv3x3", X)
        assert run.ok
        checks = {f["check"]: f["status"] for f in run.compatibility}
        assert checks["target-platform"] == "ok" and checks["runtime"] == "ok", run.compatibility
        assert run.versions["api_version"].startswith("2.5.0")
    for farm in farm_on(folder, None):  # a plain simulated board: the pairing is not checked
        run = run_model(farm.session("rk3588-01"), "conv3x3", X)
        assert {f["check"]: f["status"] for f in run.compatibility}["runtime"] == "skipped"
