"""``npu-hil nightly --runtime-matrix``: the suite once per runtime the inventory's boards list,
each run its own folder (the runtime in its run key), then ``matrix-<id>/matrix.json`` and
``matrix.html`` with the outcomes side by side and the cases that differ first. The boards are
simulated stand-ins for librknnrt 1.5.0 and 2.5.0, and the model a compiled rknn-toolkit2 2.5.0
file (format 6): 1.5.0 refuses it, 2.5.0 runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

DATA = Path(__file__).resolve().parents[1] / "data" / "artifacts" / "rockchip"
INVENTORY = """\
manifest: m.json
boards:
  - name: rk3588-01
    target: rk3588
    runtimes:
      "1.5.0": {runtime_versions: {api_version: "1.5.0 (e6fe0c678@2023-05-25)"}}
      "2.5.0": {runtime_versions: {api_version: "2.5.0 (74ea630ce@2026-09-29)"}}
  - {name: kl730-01, target: kl730}
"""
SUITE = """
import numpy as np
import pytest

X = {"input": np.random.default_rng(0).integers(0, 255, (1, 3, 4, 8)).astype(np.uint8)}

@pytest.mark.soc("rk3588", "kl730")
def test_compiled(run_model):
    assert run_model("conv3x3", X).ok

@pytest.mark.soc("rk3588")
def test_plain(run_model):
    assert run_model("identity", X).ok
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    suite = tmp_path / "tests" / "hil"
    suite.mkdir(parents=True)
    (suite / "test_suite.py").write_text(SUITE)
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


def _nightly(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "npu_hil.harness.cli.main", "nightly", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )


def _summary(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "summary.json").read_text()))


def test_the_matrix_runs_each_runtime_and_puts_the_difference_first(checkout: Path) -> None:
    proc = _nightly(checkout, "--runtime-matrix")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # 1.5.0 refuses the compiled model
    folders = sorted(p for p in (checkout / "reports").iterdir() if p.is_dir())
    (matrix_dir,) = [p for p in folders if p.name.startswith("matrix-")]
    runs = [p for p in folders if not p.name.startswith(("matrix-", "."))]
    assert len(runs) == 2
    summaries = {_summary(r)["meta"]["run_kind"]["selection"]["runtime"]: _summary(r) for r in runs}
    assert set(summaries) == {"1.5.0", "2.5.0"}
    keys = {s["meta"]["run_key"] for s in summaries.values()}
    assert len(keys) == 2  # each runtime has its own history and baselines

    matrix = json.loads((matrix_dir / "matrix.json").read_text())
    assert [c["runtime"] for c in matrix["runtimes"]] == ["1.5.0", "2.5.0"]
    assert matrix["disagreements"] == 1
    first, *rest = matrix["cases"]
    assert first["board"] == "rk3588-01" and first["nodeid"].endswith("test_compiled[rk3588-01]")
    assert not first["agree"]
    old, new = first["cells"]["1.5.0"], first["cells"]["2.5.0"]
    assert old["outcome"] in ("failed", "error") and "runtime 1.5.0" in old["message"]
    assert new["outcome"] == "passed" and new["versions"]["api_version"].startswith("2.5.0")
    assert all(row["agree"] for row in rest)
    assert {row["nodeid"].rsplit("::", 1)[-1] for row in rest} == {"test_plain[rk3588-01]"}
    # The Kneron board has no runtimes: no run of the matrix had it.
    assert all(row["board"] != "kl730-01" for row in matrix["cases"])

    page = (matrix_dir / "matrix.html").read_text()
    assert "1 case(s) differ between runtimes" in page
    for run in runs:
        assert f"../{run.name}/report.html" in page
    assert "runtime matrix: 2 runtimes, 2 cases, 1 differ" in proc.stdout


def test_one_runtime_runs_only_the_boards_that_have_it(checkout: Path) -> None:
    proc = _nightly(checkout, "--runtime", "2.5.0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run,) = [p for p in (checkout / "reports").iterdir() if p.is_dir() and p.name[0] != "."]
    summary = _summary(run)
    assert set(summary["per_board"]) == {"rk3588-01", "(no board)"}
    assert summary["per_board"]["(no board)"]["skipped"] == 1  # the Kneron board's case
    records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    (skipped,) = [r for r in records if r["outcome"] == "skipped"]
    assert "--runtime 2.5.0: boards without it left out" in skipped["message"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--runtime", "9.9"], "--runtime '9.9': no board of inventory.yaml has that runtime"),
        (["--runtime", "1.5.0", "--runtime-matrix"], "not allowed with argument"),
    ],
)
def test_a_bad_runtime_is_one_line_and_exit_2(
    checkout: Path, args: list[str], expected: str
) -> None:
    proc = _nightly(checkout, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert expected in proc.stderr
    assert not (checkout / "reports").exists() or not any((checkout / "reports").iterdir())


def test_a_matrix_of_an_inventory_without_runtimes_is_refused(checkout: Path) -> None:
    (checkout / "inventory.yaml").write_text("boards:\n  - {name: rk3588-01, target: rk3588}\n")
    proc = _nightly(checkout, "--runtime-matrix")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "list no runtimes" in proc.stderr


def test_inventory_check_lists_each_boards_runtimes(checkout: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "npu_hil.harness.cli.main", "inventory", "check", "--json"],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    boards = {b["name"]: b["runtimes"] for b in json.loads(proc.stdout)["boards"]}
    assert boards == {"rk3588-01": ["1.5.0", "2.5.0"], "kl730-01": []}
