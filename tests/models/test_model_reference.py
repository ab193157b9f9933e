"""Host reference outputs by onnxruntime, and the errors for inputs that do not fit the model."""

from __future__ import annotations

import numpy as np
import pytest

from npu_hil.harness.models import ModelInputError, build, reference_outputs
from npu_hil.harness.models.reference import input_dtypes
from npu_hil.harness.sim import execute


def test_integer_images_feed_float_models() -> None:
    model = build("identity", (1, 3, 2, 2))
    image = np.arange(12, dtype=np.uint8).reshape(1, 3, 2, 2)
    out = reference_outputs(model, {"input": image})["output"]
    assert out.dtype == np.float32 and np.array_equal(out, image.astype(np.float32))
    assert input_dtypes(model) == {"input": np.dtype("float32")}


def test_conv1x1_matches_a_direct_computation() -> None:
    model = build("conv1x1", (2, 3, 2, 4), out_channels=5)
    weight = np.frombuffer(model.graph.initializer[0].raw_data, np.float32).reshape(5, 3)
    bias = np.frombuffer(model.graph.initializer[1].raw_data, np.float32)
    x = np.random.default_rng(1).standard_normal((2, 3, 2, 4)).astype(np.float32)
    direct = np.einsum("mc,nchw->nmhw", weight, x) + bias.reshape(1, 5, 1, 1)
    assert np.allclose(reference_outputs(model, {"input": x})["output"], direct, atol=1e-5)
    assert np.allclose(execute.run_numpy(model, {"input": x})["output"], direct, atol=1e-5)


def test_the_numpy_path_refuses_what_it_cannot_run() -> None:
    with pytest.raises(execute.NotSupportedByNumpy, match="conv_0"):
        execute.check_numpy(build("conv3x3", (1, 3, 2, 2)))
    with pytest.raises(execute.NotSupportedByNumpy, match="ConvTranspose"):
        execute.run_numpy(build("deconv", (1, 3, 2, 2)), {"input": np.zeros((1, 3, 2, 2))})


@pytest.mark.parametrize(
    ("inputs", "match"),
    [
        ({}, "missing input"),
        ({"input": np.zeros((1, 3, 2, 2)), "extra": np.zeros(1)}, "unknown extra"),
        ({"input": np.zeros((1, 3, 2, 5))}, "onnxruntime refused"),
    ],
)
def test_inputs_must_fit(inputs: dict[str, np.ndarray], match: str) -> None:
    with pytest.raises(ModelInputError, match=match):
        reference_outputs(build("identity", (1, 3, 2, 2)), inputs)
