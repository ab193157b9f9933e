"""run_model end to end on simulated boards: pack → deploy → run → fetch → diff, every device
buffer checked against the host's expectation computed from what the board reported."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.codec import get_layout
from npu_hil.harness.errors import DeviceError, LayoutError
from npu_hil.harness.farm import Farm, parse_inventory
from npu_hil.harness.models import ManifestError, build, save
from npu_hil.harness.pipeline import ModelRun, run_model
from npu_hil.harness.pipeline.run import job_inputs

ROOT = Path(__file__).resolve().parents[2]
DTYPE = {"kl730": "int8", "rk2118": "float16"}


@pytest.fixture(scope="module")
def sim_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    with Farm(ROOT / "inventory.yaml", workdir=tmp_path_factory.mktemp("farm")) as farm:
        yield farm


def tensor(target: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(DTYPE.get(target, "uint8"))
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 2).astype(dtype)
    low = -128 if dtype.kind == "i" else 0
    return rng.integers(low, 127, shape, endpoint=True).astype(dtype)


CASES = [
    ("rk3588", "conv3x3", (1, 3, 5, 7)),
    ("rv1106", "depthwise", (1, 20, 3, 5)),
    ("rk3566", "identity", (2, 3, 4, 9)),
    ("rk2118", "conv1x1", (1, 3, 3, 5)),
    ("kl730", "conv1x1", (1, 5, 3, 7)),
    ("rdk-x5", "deconv", (1, 3, 3, 7)),
    ("rdk-s100", "add_relu", (1, 4, 2, 5)),
]


@pytest.mark.slow
@pytest.mark.parametrize(("target", "model", "shape"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_a_model_runs_and_every_buffer_matches(
    sim_farm: Farm, target: str, model: str, shape: tuple[int, ...], tmp_path: Path
) -> None:
    (chosen,) = sim_farm.boards(targets=[target])
    session = sim_farm.session(chosen)
    names = ("a", "b") if model == "add_relu" else ("input",)
    inputs = {name: tensor(target, shape, seed) for seed, name in enumerate(names)}
    run = run_model(session, model, inputs, reports_dir=tmp_path)
    assert isinstance(run, ModelRun)
    assert run.ok, run.summary()
    assert (run.board, run.target, run.simulated, run.adapter) == (chosen.name, target, True, "sim")
    assert [t.name for t in run.inputs] == list(names) and [t.name for t in run.outputs] == [
        "output"
    ]
    for item in run.tensors:
        assert item.diff.verdict == "equal"
        assert item.diff.target == target
        assert not item.disagreements, [f.message for f in item.disagreements]
        assert item.data.dtype == np.uint8 and item.data.size == item.layout.nbytes
        assert item.reported and item.heatmap is None
    assert run.versions["target"] == target
    ((artifact, digest),) = run.artifact_hashes.items()
    assert artifact.startswith(model) and artifact.endswith(".onnx") and len(digest) == 64
    assert run.summary().splitlines()[0].endswith("simulated): ok")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_an_onnx_file_and_a_model_proto(sim_farm: Farm, tmp_path: Path) -> None:
    session = sim_farm.session("rk3576-01")
    proto = build("conv1x1", (1, 3, 3, 5), out_channels=20)
    path = save(proto, tmp_path / "head.onnx")
    given = {"input": tensor("rk3576", (1, 3, 3, 5))}
    by_path = run_model(session, path, given)
    by_proto = run_model(session, proto, given)
    assert by_path.ok and by_proto.ok, by_path.summary()
    assert by_path.model == "head" and by_path.outputs[0].diff.shape == (1, 20, 3, 5)
    np.testing.assert_array_equal(by_path.outputs[0].data, by_proto.outputs[0].data)


@pytest.mark.slow
def test_a_fault_fails_the_run_with_the_finding_first(sim_farm: Farm, tmp_path: Path) -> None:
    session = sim_farm.session("rk3588-01")
    given = {"input": tensor("rk3588", (1, 3, 3, 5))}
    run = run_model(
        session, "conv1x1", given, faults=[{"name": "dirty-padding"}], reports_dir=tmp_path
    )
    assert not run.ok
    assert run.inputs[0].ok and not run.outputs[0].ok
    summary = run.summary()
    first = summary.splitlines()[0]
    assert first.startswith("rk3588 NC1HWC2 (output)") and first.endswith("different")
    assert (
        "dirty-padding: " in summary
        and "conv1x1 on rk3588-01 (rk3588, simulated): FAILED" in summary
    )
    heatmap = run.outputs[0].heatmap
    assert heatmap is not None and heatmap.parent == tmp_path
    assert heatmap.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "dirty-padding" in {f.kind for f in run.outputs[0].diff.findings}
    # The fault was the job's alone: the next run on the same board is clean.
    assert run_model(session, "conv1x1", given).ok


def test_a_byte_swap_on_a_16_bit_output(sim_farm: Farm) -> None:
    session = sim_farm.session("rk2118-01")
    run = run_model(
        session, "conv1x1", {"input": tensor("rk2118", (1, 3, 3, 5))}, faults=["byte-swap"]
    )
    assert not run.ok and "byte-swap" in run.summary()


def test_errors_propagate(sim_farm: Farm) -> None:
    session = sim_farm.session("rk3566-01")
    # one channel: the seed's rule A (the compiler's measured limit covers 3 channels)
    wide = build("conv3x3", (1, 1, 1, 2390))
    with pytest.raises(DeviceError, match="rule A"):
        run_model(session, wide, {"input": tensor("rk3566", (1, 1, 1, 2390))})
    with pytest.raises(LayoutError, match="neither a reference model"):
        run_model(session, "resnet", {"input": tensor("rk3566", (1, 3, 2, 2))})
    with pytest.raises(LayoutError):
        run_model(session, "identity", {"images": tensor("rk3566", (1, 3, 2, 2))})
    # The board goes on after a refusal.
    assert run_model(session, "identity", {"input": tensor("rk3566", (1, 3, 2, 2))}).ok


def test_a_named_native_input_layout(sim_farm: Farm) -> None:
    session = sim_farm.session("rk3588-01")
    given = {"input": tensor("rk3588", (1, 3, 3, 5))}
    run = run_model(session, "conv1x1", given, input_layout="NC1HWC2")
    assert run.ok, run.summary()
    assert run.inputs[0].diff.layout == "NC1HWC2"
    with pytest.raises(LayoutError):
        run_model(session, "conv1x1", given, input_layout={"input": "NCWH"})


@pytest.mark.parametrize(
    ("board_name", "adapter", "layout"),
    [
        ("rk3588-01", "rknn_native", "NHWC"),
        ("rdk-x5-01", "hobot_native", "strided"),
        ("kl730-01", "kneron", "1W16C8B"),
    ],
)
def test_pass_through_runtimes_get_buffers_packed_by_the_codec(
    sim_farm: Farm, board_name: str, adapter: str, layout: str
) -> None:
    session = dataclasses.replace(sim_farm.session(board_name), adapter=adapter)
    x = tensor(session.target, (1, 3, 5, 7))
    (spec,), arrays = job_inputs(session, {"input": x}, None)
    assert (spec.layout, spec.pass_through, spec.shape, spec.dtype) == (
        layout,
        True,
        (1, 3, 5, 7),
        x.dtype.name,
    )
    packed = get_layout(session.target, layout, x.shape, x.dtype, role="input").pack(x)
    np.testing.assert_array_equal(arrays["input"], packed)
    # A runtime that converts logical tensors gets them as they are.
    (spec,), arrays = job_inputs(sim_farm.session(board_name), {"input": x}, None)
    assert (spec.layout, spec.pass_through) == ("NCHW", False) and arrays["input"] is x


HW_LOCAL = """\
boards:
  - {name: rk3588-local, target: rk3588, backend: hw, transport: local}
"""


@pytest.mark.slow
def test_a_real_board_needs_a_compiled_artifact(tmp_path: Path) -> None:
    given = {"input": tensor("rk3588", (1, 3, 2, 2))}
    with Farm(parse_inventory(HW_LOCAL), workdir=tmp_path) as farm:
        session = farm.session("rk3588-local")
        assert not session.simulated and session.adapter == "rknn_native"
        with pytest.raises(ManifestError, match="names no model manifest"):
            run_model(session, "identity", given)
        with pytest.raises(LayoutError, match="simulated board"):
            run_model(session, "identity", given, faults=["byte-swap"])
    onnx_path = save(build("identity", (1, 3, 2, 2)), tmp_path / "identity.onnx")
    (tmp_path / "manifest.json").write_text(
        json.dumps({"version": 1, "models": {"identity": {"onnx": "identity.onnx"}}})
    )
    inventory = parse_inventory(HW_LOCAL + "manifest: manifest.json\n", base=tmp_path)
    with Farm(inventory, workdir=tmp_path) as farm:
        session = farm.session("rk3588-local")
        for model in ("identity", onnx_path):
            with pytest.raises(ManifestError, match="no compiled artifact for rk3588"):
                run_model(session, model, given)
        with pytest.raises(ManifestError, match="no model for 'conv1x1'"):
            run_model(session, "conv1x1", given)
