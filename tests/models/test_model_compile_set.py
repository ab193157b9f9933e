"""What `npu-hil models build` writes without the compiler: the ONNX per model and shape, the
calibration set, the manifest's `compiled` entries, and the runner finding an entry by content.
The compiler itself is exercised in tests/vendor_rknn (the vendor-rknn tox env)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.errors import ArtifactError
from npu_hil.harness.farm import Farm, parse_inventory
from npu_hil.harness.models import ManifestError, build, load_manifest
from npu_hil.harness.models.compile_set import REGRESSION_SHAPES, entry_key, plan, record
from npu_hil.harness.models.manifest import parse_manifest
from npu_hil.harness.pipeline.model import resolve_model
from npu_hil.targets.rockchip.artifact import NativeTensor, read_tensor_table
from npu_hil.targets.rockchip.compiler.build import (
    BuildResult,
    CompilerError,
    check_precision,
    precisions,
    read_dataset,
)

# Measured: rknn-toolkit2 2.5.0, rk3588 int8, conv3x3 at 1x16x5x7 (the file's tensor table).
RK3588_CONV = {
    "compiler": "rknn-toolkit2 2.5.0",
    "precision": "int8",
    "inputs": [
        {
            "name": "input",
            "dtype": "int8",
            "shape": [1, 16, 5, 7],
            "native": [1, 1, 5, 7, 16],
            "size": 576,
        }
    ],
    "outputs": [
        {
            "name": "output",
            "dtype": "int8",
            "shape": [1, 16, 5, 7],
            "native": [1, 2, 5, 7, 16],
            "size": 1152,
        }
    ],
}


def test_precisions_per_target() -> None:
    assert precisions("rk3588") == ("int8", "float16")
    assert precisions("rv1103b") == ("int8",) and precisions("rk2118") == ("float16",)
    with pytest.raises(CompilerError, match=r"rk2118: rknn-toolkit2 2\.5\.0 builds float16 only"):
        check_precision("rk2118", "int8")
    with pytest.raises(CompilerError, match="builds int8 only, not float16"):
        check_precision("rv1106", "float16")


def test_plan_writes_the_regression_models(tmp_path: Path) -> None:
    jobs = plan("rk3588", "int8", tmp_path, models=["conv3x3", "add_relu"])
    assert [j.key for j in jobs] == [
        entry_key(m, s) for m in ("conv3x3", "add_relu") for s in REGRESSION_SHAPES
    ]
    add = jobs[-1]
    assert add.inputs == ("a", "b") and add.graph["output"] == (1, 16, 5, 7)
    # the bytes the runner builds for that model and shape
    assert add.onnx.read_bytes() == build("add_relu", (1, 16, 5, 7)).SerializeToString()
    assert add.rknn == tmp_path / "rk3588" / "add_relu-1x16x5x7.rknn"
    sample = add.dataset[0]
    assert sorted(sample) == ["a", "b"]
    data = np.load(sample["a"])
    assert data.shape == (1, 16, 5, 7) and data.dtype == np.float32  # NCHW float
    assert data.min() >= 0 and data.max() <= 255
    assert not plan("rk2118", "float16", tmp_path / "fp", models=["conv1x1"])[0].dataset
    with pytest.raises(ManifestError, match="unknown reference model 'vit'"):
        plan("rk3588", "int8", tmp_path, models=["vit"])


def test_a_given_dataset(tmp_path: Path) -> None:
    inputs = {"a": (1, 3, 2, 2), "b": (1, 3, 2, 2)}
    for k in range(2):
        for name in inputs:
            np.save(tmp_path / f"{k:03d}.{name}.npy", np.zeros(inputs[name], np.float32))
    samples = read_dataset(tmp_path, inputs)
    assert [sorted(s) for s in samples] == [["a", "b"], ["a", "b"]]
    np.save(tmp_path / "009.npy", np.zeros((1, 3, 2, 2), np.float32))
    with pytest.raises(CompilerError, match="needs one file per input"):
        read_dataset(tmp_path, inputs)
    (tmp_path / "009.npy").unlink()
    np.save(tmp_path / "002.c.npy", np.zeros((1, 3, 2, 2), np.float32))
    with pytest.raises(CompilerError, match="the model has no input 'c'"):
        read_dataset(tmp_path, inputs)
    with pytest.raises(CompilerError, match=r"expected an NCHW array of shape \[1, 3, 2, 3\]"):
        read_dataset(tmp_path, {"a": (1, 3, 2, 3), "b": (1, 3, 2, 2), "c": (1, 3, 2, 2)})
    with pytest.raises(CompilerError, match="no such folder"):
        read_dataset(tmp_path / "nope", inputs)


def test_the_manifest_keeps_what_the_compiler_stated(tmp_path: Path) -> None:
    jobs = plan("rk3588", "int8", tmp_path, models=["conv3x3"])
    job = jobs[1]
    job.rknn.parent.mkdir(parents=True)
    job.rknn.write_bytes(b"RKNN")

    def tensors(role: str) -> tuple[NativeTensor, ...]:
        return tuple(
            NativeTensor(
                t["name"], role[:-1], t["dtype"], tuple(t["shape"]), tuple(t["native"]), t["size"]
            )
            for t in RK3588_CONV[role]
        )

    result = BuildResult(job, tensors("inputs"), tensors("outputs"), "full", "rknn-toolkit2 2.5.0")
    path = record(tmp_path / "manifest.json", [result], {job.key: "conv3x3"})
    data = json.loads(path.read_text())
    entry = data["models"]["conv3x3-1x16x5x7"]
    assert entry == {
        "onnx": "onnx/conv3x3-1x16x5x7.onnx",
        "model": "conv3x3",
        "shape": [1, 16, 5, 7],
        "artifacts": {"rk3588": "rk3588/conv3x3-1x16x5x7.rknn"},
        "compiled": {"rk3588": RK3588_CONV},
    }
    loaded = load_manifest(path).model("conv3x3-1x16x5x7")
    assert loaded.compiled["rk3588"].outputs[0].native == (1, 2, 5, 7, 16)
    # thresholds a user wrote into the entry survive a rebuild, and a failed one
    data["models"]["conv3x3-1x16x5x7"]["accuracy"] = {"cosine_min": 0.99, "snr_db_min": 30}
    path.write_text(json.dumps(data))
    record(path, [result], {job.key: "conv3x3"})
    assert load_manifest(path).model("conv3x3-1x16x5x7").accuracy == {
        "cosine_min": 0.99,
        "snr_db_min": 30,
    }
    # a failed rebuild drops what the manifest listed for that target
    record(path, [], {}, failed=[job])
    entry_after = load_manifest(path).model("conv3x3-1x16x5x7")
    assert not entry_after.artifacts and entry_after.accuracy["cosine_min"] == 0.99


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"precision": "int4"}, "compiled.rk3588.precision: expected int8 or float16"),
        ({"inputs": []}, "compiled.rk3588.inputs: expected a list of tensors"),
        ({"outputs": [{"name": "output"}]}, r"compiled.rk3588.outputs\[0\]: missing 'dtype'"),
        ({"colour": 1}, "compiled.rk3588.colour: unknown key"),
    ],
)
def test_bad_compiled_entries(change: dict, message: str) -> None:
    data = {
        "version": 1,
        "models": {"m": {"onnx": "m.onnx", "compiled": {"rk3588": {**RK3588_CONV, **change}}}},
    }
    with pytest.raises(ManifestError, match=message):
        parse_manifest(data, source="m.json")
    bad_native = {**RK3588_CONV, "inputs": [{**RK3588_CONV["inputs"][0], "native": [1, 0]}]}
    data["models"]["m"]["compiled"]["rk3588"] = bad_native
    with pytest.raises(ManifestError, match=r"inputs\[0\].native: expected a list of positive"):
        parse_manifest(data, source="m.json")
    data["models"]["m"]["compiled"] = {"rk9999": RK3588_CONV}
    with pytest.raises(ManifestError, match="unknown target 'rk9999'"):
        parse_manifest(data, source="m.json")


def test_a_real_board_finds_the_model_for_its_shape(tmp_path: Path) -> None:
    jobs = plan("rk3588", "float16", tmp_path / "models", models=["conv3x3"])
    for job in jobs:
        job.rknn.parent.mkdir(parents=True, exist_ok=True)
        job.rknn.write_bytes(b"RKNN")
    # Only the resolution is under test here: native = the shape, size = its bytes.
    results = [
        BuildResult(
            j,
            *(
                tuple(
                    NativeTensor(
                        n, role, "float16", j.graph[n], j.graph[n], 2 * int(np.prod(j.graph[n]))
                    )
                    for n in names
                )
                for role, names in (("input", j.inputs), ("output", ("output",)))
            ),
            "full",
            "rknn-toolkit2 2.5.0",
        )
        for j in jobs
    ]
    manifest = record(tmp_path / "models" / "manifest.json", results, {})
    inventory = parse_inventory(
        "boards:\n  - {name: rk, target: rk3588, backend: hw, transport: local}\n"
        f"manifest: {manifest}\n"
    )
    with Farm(inventory, workdir=tmp_path / "farm") as farm:
        session = farm.session("rk")
        for job in jobs:
            shape = job.graph["input"]
            given = {"input": np.zeros(shape, np.uint8)}
            reference, deployed, label = resolve_model(session, "conv3x3", given)
            assert (reference, deployed, label) == (job.onnx, job.rknn, "conv3x3")
        with pytest.raises(ManifestError, match="no model for 'conv3x3'"):
            resolve_model(session, "conv3x3", {"input": np.zeros((1, 3, 2, 2), np.uint8)})


def test_not_an_rknn_file(tmp_path: Path) -> None:
    (tmp_path / "a.rknn").write_bytes(b"ONNX" + bytes(100))
    with pytest.raises(ArtifactError, match="not a compiled RKNN model"):
        read_tensor_table(tmp_path / "a.rknn")
    (tmp_path / "b.rknn").write_bytes(b"RKNN" + bytes(200))
    with pytest.raises(ArtifactError, match="found 0 inputs and 0 outputs"):
        read_tensor_table(tmp_path / "b.rknn")
    with pytest.raises(ArtifactError, match=r"no tensor-table entry for input, output"):
        read_tensor_table(tmp_path / "b.rknn", {"input": (1, 3, 2, 2), "output": (1, 3, 2, 2)})
    with pytest.raises(ArtifactError, match="cannot read"):
        read_tensor_table(tmp_path / "missing.rknn")


# --------------------------------------------------------------------- a user's own models


def _user_model(tmp_path: Path, shape: tuple[int, ...] = (1, 3, 8, 10)) -> Path:
    path = tmp_path / "My Net.onnx"
    path.write_bytes(build("conv1x1", shape).SerializeToString())
    return path


def test_a_users_model_is_planned_under_a_key_of_its_content(tmp_path: Path) -> None:
    from npu_hil.harness.models.compile_set import plan_files

    path = _user_model(tmp_path)
    normalize = ((123.675, 116.28, 103.53), (58.395, 57.12, 57.375))
    (job,) = plan_files("rv1106", "int8", tmp_path / "out", [path], normalize=normalize)
    assert job.key.startswith("My_Net-") and len(job.key) == len("My_Net-") + 12
    assert job.onnx.read_bytes() == path.read_bytes()
    assert job.normalize == normalize  # type: ignore[attr-defined]
    assert len(job.dataset) == 4  # type: ignore[attr-defined]
    # Another precision or normalization is another build; the same inputs, the same key.
    (again,) = plan_files("rv1106", "int8", tmp_path / "out", [path], normalize=normalize)
    (plain,) = plan_files("rv1106", "int8", tmp_path / "out", [path])
    (fp16,) = plan_files("rk3588", "float16", tmp_path / "out", [path])
    assert again.key == job.key and len({job.key, plain.key, fp16.key}) == 3


def test_a_users_model_with_a_symbolic_batch_is_refused_before_compiling(tmp_path: Path) -> None:
    import onnx

    from npu_hil.harness.models.compile_set import plan_files

    model = build("conv1x1", (1, 3, 8, 10))
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    path = tmp_path / "dynamic.onnx"
    onnx.save_model(model, str(path))
    with pytest.raises(ManifestError, match=r"input input has a symbolic or unknown size"):
        plan_files("rv1106", "int8", tmp_path / "out", [path])
    plain = _user_model(tmp_path)
    with pytest.raises(ManifestError, match=r"input input has 3 channels; --mean and --std give 1"):
        plan_files("rv1106", "int8", tmp_path / "out", [plain], normalize=((0.5,), (2.0,)))
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(ManifestError, match=r"junk\.onnx: not an ONNX model"):
        plan_files("rv1106", "int8", tmp_path / "out", [tmp_path / "junk.onnx"])


def _native(role: str, entry: dict[str, object]) -> NativeTensor:
    return NativeTensor(
        str(entry["name"]),
        role,
        str(entry["dtype"]),
        tuple(entry["shape"]),  # type: ignore[arg-type]
        tuple(entry["native"]),  # type: ignore[arg-type]
        int(entry["size"]),  # type: ignore[call-overload]
    )


def test_a_compiled_users_model_is_found_in_the_manifest_again(tmp_path: Path) -> None:
    from npu_hil.harness.models.compile_set import cached, plan_files

    out = tmp_path / "out"
    (job,) = plan_files("rk3588", "int8", out, [_user_model(tmp_path, (1, 16, 5, 7))])
    manifest = out / "manifest.json"
    assert not cached(manifest, job)
    # What the compiler stored for this shape (RK3588_CONV, measured), and a compiled file.
    inputs = tuple(_native("input", t) for t in RK3588_CONV["inputs"])  # type: ignore[attr-defined]
    outputs = tuple(_native("output", t) for t in RK3588_CONV["outputs"])  # type: ignore[attr-defined]
    job.artifact.parent.mkdir(parents=True, exist_ok=True)
    job.artifact.write_bytes(b"RKNN")
    built = BuildResult(job, inputs, outputs, "full", "rknn-toolkit2 2.5.0")  # type: ignore[arg-type]
    record(manifest, [built], {})
    assert cached(manifest, job)
    job.artifact.unlink()
    assert not cached(manifest, job)
