"""Reference models, built with ``onnx.helper``: small and deterministic, input ``input`` (``a``
and ``b`` for :func:`add_relu`), output ``output``, weights from a fixed seed scaled by
1/sqrt(fan-in) so outputs keep the inputs' range. Opset 13 and IR version 8: every onnxruntime
release since 1.10 runs them, so the lower bound in ``pyproject.toml`` stays honest.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
IR_VERSION = 8
INPUT = "input"
OUTPUT = "output"


def _check_shape(shape: Sequence[int], what: str) -> tuple[int, int, int, int]:
    dims = tuple(int(d) for d in shape)
    if len(dims) != 4 or any(d < 1 for d in dims):
        raise ValueError(f"{what}: expected an NCHW shape of four positive sizes, got {shape!r}")
    return dims[0], dims[1], dims[2], dims[3]


def _value(name: str, shape: Sequence[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def _model(
    name: str,
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    output_shape: Sequence[int],
    initializers: Sequence[tuple[str, np.ndarray]] = (),
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        name,
        inputs,
        [_value(OUTPUT, output_shape)],
        initializer=[numpy_helper.from_array(array, key) for key, array in initializers],
    )
    model = helper.make_model(
        graph,
        producer_name="npu-hil",
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
    )
    helper.set_model_props(model, {"npu_hil.model": name})
    return model


def _weights(seed: int, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights: np.ndarray = (rng.standard_normal(shape) / np.sqrt(max(fan_in, 1))).astype(np.float32)
    return weights


def _bias(seed: int, channels: int) -> np.ndarray:
    return np.random.default_rng(seed + 1000).uniform(-0.5, 0.5, channels).astype(np.float32)


def identity(shape: Sequence[int]) -> onnx.ModelProto:
    """Output = input: a pure layout check (the device re-lays the input out as its output)."""
    dims = _check_shape(shape, "identity")
    node = helper.make_node("Identity", [INPUT], [OUTPUT], name="identity_0")
    return _model("identity", [node], [_value(INPUT, dims)], dims)


def _conv(
    name: str,
    node_name: str,
    dims: tuple[int, int, int, int],
    out_shape: tuple[int, int, int, int],
    weight: np.ndarray,
    seed: int,
    op: str = "Conv",
    **attrs: Any,
) -> onnx.ModelProto:
    """Model ``name``: one ``op`` node with ``weight`` and a bias of the output's channels."""
    node = helper.make_node(op, [INPUT, "weight", "bias"], [OUTPUT], name=node_name, **attrs)
    initializers = [("weight", weight), ("bias", _bias(seed, out_shape[1]))]
    return _model(name, [node], [_value(INPUT, dims)], out_shape, initializers)


def conv1x1(
    shape: Sequence[int], out_channels: int | None = None, seed: int = 11
) -> onnx.ModelProto:
    """A 1x1 convolution with bias (pointwise), ``out_channels`` defaulting to the input's."""
    n, c, h, w = dims = _check_shape(shape, "conv1x1")
    m = out_channels or c
    weight = _weights(seed, (m, c, 1, 1), c)
    return _conv("conv1x1", "conv_0", dims, (n, m, h, w), weight, seed, kernel_shape=[1, 1])


def conv3x3(
    shape: Sequence[int], out_channels: int | None = None, dilation: int = 1, seed: int = 13
) -> onnx.ModelProto:
    """A 3x3 convolution, padded to keep H and W ("same"), optionally dilated."""
    n, c, h, w = dims = _check_shape(shape, "conv3x3")
    m = out_channels or c
    weight = _weights(seed, (m, c, 3, 3), 9 * c)
    spacing: dict[str, Any] = {"dilations": [dilation, dilation], "pads": [dilation] * 4}
    return _conv(
        "conv3x3", "conv_0", dims, (n, m, h, w), weight, seed, kernel_shape=[3, 3], **spacing
    )


def depthwise(shape: Sequence[int], dilation: int = 1, seed: int = 17) -> onnx.ModelProto:
    """A 3x3 depthwise convolution (group = channels), "same" padding."""
    dims = _check_shape(shape, "depthwise")
    c = dims[1]
    weight = _weights(seed, (c, 1, 3, 3), 9)
    spacing: dict[str, Any] = {"dilations": [dilation, dilation], "pads": [dilation] * 4}
    return _conv(
        "depthwise",
        "depthwise_0",
        dims,
        dims,
        weight,
        seed,
        kernel_shape=[3, 3],
        group=c,
        **spacing,
    )


def deconv(
    shape: Sequence[int], out_channels: int | None = None, seed: int = 19
) -> onnx.ModelProto:
    """A 2x2 stride-2 transposed convolution (ConvTranspose): doubles H and W."""
    n, c, h, w = dims = _check_shape(shape, "deconv")
    m = out_channels or c
    weight = _weights(seed, (c, m, 2, 2), c)
    stride: dict[str, Any] = {"kernel_shape": [2, 2], "strides": [2, 2]}
    out_shape = (n, m, 2 * h, 2 * w)
    return _conv("deconv", "deconv_0", dims, out_shape, weight, seed, "ConvTranspose", **stride)


def add_relu(shape: Sequence[int]) -> onnx.ModelProto:
    """Relu(a + b) over two inputs of the same shape: an element-wise op with two inputs."""
    dims = _check_shape(shape, "add_relu")
    nodes = [
        helper.make_node("Add", ["a", "b"], ["sum"], name="add_0"),
        helper.make_node("Relu", ["sum"], [OUTPUT], name="relu_0"),
    ]
    return _model("add_relu", nodes, [_value("a", dims), _value("b", dims)], dims)


ModelBuilder = Callable[..., onnx.ModelProto]

MODELS: dict[str, ModelBuilder] = {
    "identity": identity,
    "conv1x1": conv1x1,
    "conv3x3": conv3x3,
    "depthwise": depthwise,
    "deconv": deconv,
    "add_relu": add_relu,
}
"""The reference models by name; each builder takes the NCHW input shape first."""


def build(name: str, shape: Sequence[int], **options: int) -> onnx.ModelProto:
    """The reference model ``name`` for an input of ``shape`` (options as the builder takes)."""
    try:
        builder = MODELS[name]
    except KeyError:
        raise ValueError(f"unknown reference model {name!r}; known: {', '.join(MODELS)}") from None
    return builder(shape, **options)


def save(model: onnx.ModelProto, path: str | os.PathLike[str]) -> Path:
    """Write ``model`` to ``path`` (parent folders created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(target))
    return target


def load(path: str | os.PathLike[str]) -> onnx.ModelProto:
    """Read an ONNX model from ``path``."""
    return onnx.load_model(str(path))
