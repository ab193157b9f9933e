"""The compiler driven the way `npu-hil models build` drives it: one child per model (an
aborting child is that model's error), the tensor table read from the file and held against the
compiler's own build log, and the manifest it writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from grid import ABORTING, Grid, log_rows

from npu_hil.harness.cli.main import main
from npu_hil.harness.models import load_manifest
from npu_hil.harness.models.compile_set import REGRESSION_SHAPES, entry_key
from npu_hil.targets.rockchip.artifact import read_tensor_table


def test_an_aborting_compiler_is_one_models_error(grid: Grid) -> None:
    target, precision, name, _, _ = ABORTING
    [(model, failure)] = list(grid.failed.items())
    assert (model.target, model.precision, model.model) == (target, precision, name)
    assert "killed by SIGABRT" in failure.message
    assert any("unsupported conv" in line for line in failure.log_tail), failure.log_tail
    # the other RK2118 models, built beside it, are there
    assert [m for m in grid.built if m.target == "rk2118"]


def test_the_file_and_the_build_log_agree(grid: Grid) -> None:
    """Two readings of the compiler: its file and its log. They agree on every int8 tensor; on
    float16 the log prints C1 four times too big (observations README), the file does not."""
    checked = 0
    for model, result in grid.built.items():
        rows = log_rows(result.job.log)
        for role, tensors in (("input", result.inputs), ("output", result.outputs)):
            for tensor in tensors:
                native, size = rows[(role, tensor.name)]
                logged = list(native)
                if model.precision == "float16":
                    assert logged[1] == 4 * tensor.native[1], (model.label, logged, tensor)
                    logged[1] = tensor.native[1]
                assert (logged, size) == (list(tensor.native), tensor.size), (model.label, tensor)
                assert tensor.size >= np.prod(tensor.shape) * np.dtype(tensor.dtype).itemsize
                checked += 1
    assert checked > 100


def test_models_build_writes_the_manifest(compiler: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "models"
    dataset = tmp_path / "dataset"
    # a given calibration set for one model (NCHW, one file per sample), generated for the other
    rng = np.random.default_rng(0)
    for shape in REGRESSION_SHAPES:
        folder = dataset / entry_key("conv3x3", shape)
        folder.mkdir(parents=True)
        for k in range(2):
            np.save(folder / f"{k:03d}.npy", rng.uniform(0, 255, shape).astype(np.float32))
    code = main(
        [
            "models",
            "build",
            "--target",
            "rv1106",
            "--models",
            "conv3x3",
            "--out",
            str(out),
            "--dataset",
            str(dataset),
            "-j",
            "2",
        ]
    )
    printed = capsys.readouterr()
    assert code == 0, printed
    assert "2 built, 0 cached, 0 failed for rv1106 (int8)" in printed.out
    code = main(
        [
            "models",
            "build",
            "--target",
            "rk3588",
            "--precision",
            "float16",
            "--models",
            "conv3x3",
            "add_relu",
            "--out",
            str(out),
            "-j",
            "2",
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and not report["failed"], report
    manifest = load_manifest(out / "manifest.json")
    assert sorted(manifest.models) == sorted(
        entry_key(m, s) for m in ("conv3x3", "add_relu") for s in REGRESSION_SHAPES
    )
    conv = manifest.model(entry_key("conv3x3", (1, 16, 5, 7)))
    assert sorted(conv.artifacts) == ["rk3588", "rv1106"]  # the second build merged
    assert conv.model == "conv3x3" and conv.shape == (1, 16, 5, 7)
    for target, precision in (("rv1106", "int8"), ("rk3588", "float16")):
        compiled = conv.compiled[target]
        assert compiled.compiler == compiler and compiled.precision == precision
        table = read_tensor_table(conv.require_artifact(target))
        assert [(t.name, t.native, t.size) for t in (*table.inputs, *table.outputs)] == [
            (t.name, t.native, t.size) for t in (*compiled.inputs, *compiled.outputs)
        ]
    add = manifest.model(entry_key("add_relu", (1, 3, 6, 10))).compiled["rk3588"]
    assert [t.name for t in add.inputs] == ["a", "b"]
    assert "rv1106" not in manifest.model(entry_key("add_relu", (1, 3, 6, 10))).artifacts


def test_a_target_that_cannot_build_the_precision_is_refused(tmp_path: Path, capsys) -> None:
    code = main(
        ["models", "build", "--target", "rk2118", "--precision", "int8", "--out", str(tmp_path)]
    )
    assert code == 2
    assert "builds float16 only" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["rv1103b", "rk3576"])
def test_a_bad_dataset_is_a_clear_error(compiler: str, tmp_path: Path, target, capsys) -> None:
    np.save(tmp_path / "000.npy", np.zeros((1, 3, 10, 6), np.float32))  # NHWC by mistake
    code = main(
        [
            "models",
            "build",
            "--target",
            target,
            "--models",
            "conv1x1",
            "--out",
            str(tmp_path / "out"),
            "--dataset",
            str(tmp_path),
        ]
    )
    assert code == 2
    assert "expected an NCHW array of shape [1, 3, 6, 10]" in capsys.readouterr().err
