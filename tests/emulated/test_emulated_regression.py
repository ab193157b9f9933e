"""The regression suite's RKNN layout cases (``npu_hil/harness/suite/test_hil_rockchip_layouts.py``)
on an emulated RK3588 and an emulated RV1106, as a nightly runs them on real boards: an inventory of
the emulated boards (``backend: hw``, ``python:`` their launchers), a manifest of compiled models
per target (``fake_compile``: the identity at every shape of the suite, described as the runtime
reports such a model), and ``pytest npu_hil/harness/suite --inventory ... --backend hw``.

Each case packs its input with the host codec, deploys the manifest's model to the board, runs
it through the unchanged agent on Debian's aarch64 Python and ``rknn_native`` into the aarch64
fake librknnrt, whose own loops copy the input to the output through the reported attributes;
the host diffs both buffers and the attributes against the codec. Cases the compiled model or the
adapter cannot serve on a real runtime are skipped with the reason (``rknn_board_gap``); none
may pass without running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fake_compile import compile_manifest

from npu_hil_testkit.emulated import EmulatedBoard

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SUITE = "npu_hil/harness/suite/test_hil_rockchip_layouts.py"
TARGETS = ("rk3588", "rv1106")
INVENTORY = Path(__file__).with_name("inventory.yaml")
NATIVE_BOARDS = ("rk3588-emu-02", "rv1106-emu-01")  # rknn_native
LITE_BOARD = "rk3588-emu-01"  # rknnlite


def hil_shapes() -> tuple[tuple[int, ...], ...]:
    from npu_hil.harness.suite.hil_cases import SHAPES

    return tuple(SHAPES)


def write_inventory(folder: Path, boards: dict[str, EmulatedBoard], manifest: Path) -> Path:
    """tests/emulated/inventory.yaml with the boards' folder filled in and the manifest named."""
    where = next(iter(boards.values())).dir.parent
    text = INVENTORY.read_text().replace("EMULATED", str(where))
    path = folder / "inventory.yaml"
    path.write_text(f"manifest: {manifest}\n{text}")
    return path


def outcomes(junit: Path) -> dict[str, list[tuple[str, str]]]:
    """``{"passed"|"failed"|"skipped": [(test id, message)]}`` from a JUnit file."""
    found: dict[str, list[tuple[str, str]]] = {"passed": [], "failed": [], "skipped": []}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "")
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        skip = case.find("skipped")
        if bad is not None:
            found["failed"].append((name, (bad.get("message") or "")[:400]))
        elif skip is not None:
            found["skipped"].append((name, skip.get("message") or ""))
        else:
            found["passed"].append((name, ""))
    return found


def run_suite(
    folder: Path, boards: dict[str, EmulatedBoard], *args: str, fault: str | None = None
) -> tuple[dict[str, list[tuple[str, str]]], subprocess.CompletedProcess[str], float]:
    """``pytest npu_hil/harness/suite/...`` on the emulated boards, as a nightly runs it on a
    farm."""
    manifest = compile_manifest(folder / "models", TARGETS, hil_shapes())
    inventory = write_inventory(folder, boards, manifest)
    junit = folder / "junit.xml"
    argv = [
        sys.executable,
        "-m",
        "pytest",
        SUITE,
        "-p",
        "no:cacheprovider",
        "-q",
        "-rs",
        "--inventory",
        str(inventory),
        "--backend",
        "hw",
        "--reports",
        str(folder / "r"),
        f"--junitxml={junit}",
        *args,
    ]
    env = dict(os.environ)
    env.pop("FAKE_RKNN_FAULT", None)
    # The farm's workdir and board locks (in the user's runtime folder) of this run alone: a
    # concurrent run (the fault runs) has other boards under the same names.
    (folder / "run").mkdir(mode=0o700)
    env["XDG_RUNTIME_DIR"] = str(folder / "run")
    if fault is not None:
        env["FAKE_RKNN_FAULT"] = fault
    start = time.monotonic()
    done = subprocess.run(
        argv, cwd=REPO, capture_output=True, text=True, timeout=1500, check=False, env=env
    )
    took = time.monotonic() - start
    assert junit.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return outcomes(junit), done, took


def test_rknn_layout_cases_on_emulated_rk3588_and_rv1106(
    emulated_boards: dict[str, EmulatedBoard], tmp_path: Path
) -> None:
    workers = os.environ.get("NPU_HIL_EMULATED_WORKERS", "2")
    found, done, took = run_suite(tmp_path, emulated_boards, "-n", workers)
    summary = {k: len(v) for k, v in found.items()}
    print(f"emulated RKNN layout cases: {summary} in {took:.0f} s")
    assert not found["failed"], "\n".join(f"{n}: {m}" for n, m in found["failed"][:10])
    assert done.returncode == 0, done.stdout[-3000:]
    # Every skip says why; the lite board's cases are all skips, each native board runs the
    # native input layout and both native output layouts at every shape.
    assert all(message for _, message in found["skipped"])
    shapes = len(hil_shapes())
    ran = [name for name, _ in found["passed"]]
    for board in NATIVE_BOARDS:
        mine = [name for name in ran if board in name]
        assert len([n for n in mine if "input_layout" in n]) == shapes, mine
        assert len([n for n in mine if "output_layout" in n]) == 2 * shapes, mine
    assert not [name for name in ran if LITE_BOARD in name]
    # The plugin's records: every case that ran ran on the aarch64 Python, and diffed an input
    # and an output buffer equal.
    (records,) = (tmp_path / "r").glob("*/records.jsonl")
    passed = [
        r for r in map(json.loads, records.read_text().splitlines()) if r["outcome"] == "passed"
    ]
    assert len(passed) == len(ran)
    for record in passed:
        assert record["runtime_versions"]["machine"] == "aarch64", record["nodeid"]
        verdicts = [(t["role"], t["verdict"]) for t in record["tensors"]]
        assert verdicts == [("input", "equal"), ("output", "equal")], record["nodeid"]


@pytest.mark.parametrize("fault", ["swapped-pixels", "dirty-padding"])
def test_the_emulated_cases_fail_when_the_runtime_writes_wrong_bytes(
    emulated_boards: dict[str, EmulatedBoard], tmp_path: Path, fault: str
) -> None:
    """The same cases against a fake runtime that misplaces two pixels of every row, or leaves
    the output's padding dirty: every output case that runs fails, on both boards."""
    found, _, _ = run_suite(
        tmp_path, emulated_boards, "-k", "output_layout and NC1HWC2 and 1x17x3x9", fault=fault
    )
    assert not found["passed"], found["passed"]
    failed = sorted(name for name, _ in found["failed"])
    assert failed == sorted(
        f"test_output_layout_round_trip[{board}-NC1HWC2-1x17x3x9]" for board in NATIVE_BOARDS
    ), found
