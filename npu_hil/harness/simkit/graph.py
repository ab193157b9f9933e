"""What the simulated runtime reads off an ONNX model when it loads it: the inputs and outputs
with their shapes, every convolution with the numbers the width rules need, and the op that
produces each output and the ops that feed it (a vendor's output layout may depend on them)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

CONV_OPS = ("Conv", "ConvTranspose")


@dataclass(frozen=True)
class TensorInfo:
    """A graph input or output: name, static shape (None where symbolic), element dtype."""

    name: str
    shape: tuple[int | None, ...]
    dtype: np.dtype

    @property
    def static(self) -> bool:
        return all(d is not None for d in self.shape)

    def matches(self, shape: tuple[int, ...]) -> bool:
        return len(shape) == len(self.shape) and all(
            want is None or want == got for want, got in zip(self.shape, shape, strict=True)
        )


@dataclass(frozen=True)
class ConvNode:
    """A Conv or ConvTranspose node: ``kind`` is ``conv``, ``depthwise`` (group == input
    channels > 1) or ``deconv``; ``width`` the input width (None when not inferable)."""

    name: str
    op_type: str
    kind: str
    width: int | None
    in_channels: int | None
    kernel_hw: tuple[int, int]
    dilation_hw: tuple[int, int]
    group: int
    height: int | None = None
    takes_input: bool = False
    """Its data input is a graph input: the model's first layer, which takes the image."""


@dataclass(frozen=True)
class GraphInfo:
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    convs: tuple[ConvNode, ...]
    producers: dict[str, str]
    """Output name → op type of the node that produces it."""
    feeders: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Output name → op types of the nodes that produce that node's inputs (what a vendor
    compiler may fuse into it)."""
    nodes: tuple[tuple[str, frozenset[str]], ...] = ()
    """Every node's op type and the names of the attributes it sets, in graph order."""


def _shape(value: onnx.ValueInfoProto) -> tuple[int | None, ...]:
    dims = value.type.tensor_type.shape.dim
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)


def _info(value: onnx.ValueInfoProto) -> TensorInfo:
    elem = value.type.tensor_type.elem_type
    return TensorInfo(value.name, _shape(value), np.dtype(helper.tensor_dtype_to_np_dtype(elem)))


def _pair(values: list[int], default: int) -> tuple[int, int]:
    if len(values) >= 2:
        return int(values[0]), int(values[1])
    if len(values) == 1:
        return int(values[0]), int(values[0])
    return default, default


def inferred_shapes(
    model: onnx.ModelProto,
) -> tuple[onnx.GraphProto, dict[str, tuple[int | None, ...]]]:
    """The graph after ONNX shape inference, and the shape of every value it names."""
    graph = shape_inference.infer_shapes(model).graph
    return graph, {v.name: _shape(v) for v in [*graph.input, *graph.value_info, *graph.output]}


def inspect(model: onnx.ModelProto) -> GraphInfo:
    """Shape inference, then the inputs, outputs, convolutions and output producers."""
    graph, shapes = inferred_shapes(model)
    constants = {init.name: init for init in graph.initializer}
    graph_inputs = {v.name for v in graph.input if v.name not in constants}
    convs = []
    producers: dict[str, str] = {}
    feeders: dict[str, tuple[str, ...]] = {}
    for node in graph.node:
        if node.op_type == "Identity" and node.input and node.input[0] in producers:
            # Compilers drop Identity: the op behind it is what lays the output out.
            producers[node.output[0]] = producers[node.input[0]]
            feeders[node.output[0]] = feeders.get(node.input[0], ())
            continue
        for out in node.output:
            producers[out] = node.op_type
            feeders[out] = tuple(producers.get(i, "") for i in node.input if i)
        if node.op_type not in CONV_OPS:
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        group = int(attrs.get("group", 1))
        x_shape = shapes.get(node.input[0], ())
        channels, height, width = x_shape[1:] if len(x_shape) == 4 else (None, None, None)
        kernel = attrs.get("kernel_shape")
        if kernel is None and node.input[1] in constants:
            kernel = list(numpy_helper.to_array(constants[node.input[1]]).shape[2:])
        kernel_hw = _pair(list(kernel or []), 1)
        dilation_hw = _pair(list(attrs.get("dilations", [])), 1)
        if node.op_type == "ConvTranspose":
            kind = "deconv"
        elif channels is not None and group == channels and group > 1:
            kind = "depthwise"
        else:
            kind = "conv"
        convs.append(
            ConvNode(
                node.name or node.output[0],
                node.op_type,
                kind,
                width,
                channels,
                kernel_hw,
                dilation_hw,
                group,
                height,
                node.input[0] in graph_inputs,
            )
        )
    return GraphInfo(
        nodes=tuple((n.op_type, frozenset(a.name for a in n.attribute)) for n in graph.node),
        inputs=tuple(_info(v) for v in graph.input if v.name not in constants),
        outputs=tuple(_info(v) for v in graph.output),
        convs=tuple(convs),
        producers=producers,
        feeders=feeders,
    )
