"""The reference models: valid ONNX that onnxruntime runs, deterministic, the documented shapes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from npu_hil.harness.models import (
    MODELS,
    build,
    conv3x3,
    deconv,
    depthwise,
    load,
    reference_outputs,
    save,
)
from npu_hil.harness.models.builders import IR_VERSION, OPSET


@pytest.mark.parametrize("shape", [(1, 3, 5, 7), (2, 1, 1, 9)])
@pytest.mark.parametrize("name", list(MODELS))
def test_every_model_is_valid_and_runs(name: str, shape: tuple[int, ...]) -> None:
    model = build(name, shape)
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version == OPSET and model.ir_version == IR_VERSION
    inputs = {i.name: np.ones(shape, np.float32) for i in model.graph.input}
    outputs = reference_outputs(model, inputs)
    n, c, h, w = shape
    expected = (n, c, 2 * h, 2 * w) if name == "deconv" else shape
    assert list(outputs) == ["output"] and outputs["output"].shape == expected
    assert np.isfinite(outputs["output"]).all()


@pytest.mark.parametrize("name", list(MODELS))
def test_models_are_deterministic(name: str) -> None:
    first, second = build(name, (1, 4, 3, 5)), build(name, (1, 4, 3, 5))
    assert first.SerializeToString() == second.SerializeToString()


def test_builder_options() -> None:
    dilated = conv3x3((1, 3, 4, 6), out_channels=5, dilation=2)
    ones = np.ones((1, 3, 4, 6), np.float32)
    assert reference_outputs(dilated, {"input": ones})["output"].shape == (1, 5, 4, 6)
    group = next(a for a in depthwise((1, 6, 3, 3)).graph.node[0].attribute if a.name == "group")
    assert group.i == 6
    output = deconv((1, 2, 3, 3), out_channels=7).graph.output[0]
    assert output.type.tensor_type.shape.dim[1].dim_value == 7
    other_seed = conv3x3((1, 3, 4, 6), seed=99).graph.initializer[0].raw_data
    assert other_seed != conv3x3((1, 3, 4, 6)).graph.initializer[0].raw_data


def test_identity_is_a_pass_through() -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    assert np.array_equal(reference_outputs(build("identity", x.shape), {"input": x})["output"], x)


def test_add_relu_has_two_inputs() -> None:
    a = np.array([-1.0, 2.0], np.float32).reshape(1, 1, 1, 2)
    b = np.array([0.5, -3.0], np.float32).reshape(1, 1, 1, 2)
    out = reference_outputs(build("add_relu", a.shape), {"a": a, "b": b})["output"]
    assert out.ravel().tolist() == [0.0, 0.0]


def test_save_and_load(tmp_path: Path) -> None:
    model = build("depthwise", (1, 4, 3, 5))
    path = save(model, tmp_path / "deep" / "dw.onnx")
    assert path.is_file() and load(path).SerializeToString() == model.SerializeToString()
    assert reference_outputs(path, {"input": np.zeros((1, 4, 3, 5), np.float32)})


@pytest.mark.parametrize("shape", [(1, 3, 5), (1, 0, 2, 2), (1, 3, -1, 2)])
def test_bad_shapes(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="NCHW shape of four positive sizes"):
        build("conv1x1", shape)
    with pytest.raises(ValueError, match="unknown reference model 'vit'"):
        build("vit", (1, 3, 2, 2))
