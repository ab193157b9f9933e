"""The numerical reference models on every board: the device's quantized output must match the
host's onnxruntime result (quantized with the parameters the device reported) within one unit."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from npu_hil.harness.models.compile_set import REGRESSION_SHAPES as MODEL_SHAPES
from npu_hil.harness.plugin import assert_run_ok
from npu_hil.harness.suite.hil_cases import input_dtype, shape_id, tensor

if TYPE_CHECKING:
    from npu_hil.harness.farm.session import BoardSession
    from npu_hil.harness.plugin.run import RunModel

MODELS = ("identity", "conv1x1", "conv3x3", "depthwise", "deconv")
TOLERANCE = 1.0


@pytest.mark.parametrize("shape", MODEL_SHAPES, ids=shape_id)
@pytest.mark.parametrize("model", MODELS)
def test_reference_model(
    run_model: RunModel, board: BoardSession, model: str, shape: tuple[int, ...]
) -> None:
    x = tensor(shape, input_dtype(board.target, board.board.vendor))
    result = run_model(model, {"input": x}, tolerance=TOLERANCE)
    assert_run_ok(result)
    assert result.artifact_hashes  # provenance: what ran


@pytest.mark.parametrize("shape", MODEL_SHAPES, ids=shape_id)
def test_add_relu_two_inputs(
    run_model: RunModel, board: BoardSession, shape: tuple[int, ...]
) -> None:
    dtype = input_dtype(board.target, board.board.vendor)
    a, b = tensor(shape, dtype, seed=1), tensor(shape, dtype, seed=2)
    result = run_model("add_relu", {"a": a, "b": b}, tolerance=TOLERANCE)
    assert_run_ok(result)
    assert [t.name for t in result.inputs] == ["a", "b"]
