"""A small ONNX graph writer for the zoo: the layers public architectures are made of.

Built on ``onnx.helper`` so the zoo needs no torch (every test environment has onnx). Weights are
He-scaled normal numbers from one seeded generator per model, so a model is byte-identical from
run to run; biases are small and uniform. Opset 13, IR version 8, as the reference models.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
IR_VERSION = 8


class Net:
    """One graph under construction; each layer returns the name of its output tensor."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.count = 0

    def _name(self, kind: str) -> str:
        self.count += 1
        return f"{kind}_{self.count}"

    def const(self, array: np.ndarray, kind: str = "w") -> str:
        name = self._name(kind)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op: str, inputs: Sequence[str], outputs: int = 1, **attrs: object) -> list[str]:
        name = self._name(op.lower())
        names = [f"{name}_out{i}" if outputs > 1 else name for i in range(outputs)]
        self.nodes.append(helper.make_node(op, list(inputs), names, name=name, **attrs))
        return names

    def input(self, name: str, shape: Sequence[int]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        return name

    # -- layers -------------------------------------------------------------------------------

    def conv(
        self,
        x: str,
        cin: int,
        cout: int,
        k: int = 3,
        stride: int = 1,
        group: int = 1,
        act: str | None = "relu",
        pad: int | None = None,
    ) -> str:
        """A convolution with bias; ``pad`` defaults to k // 2 ("same" at stride 1)."""
        fan_in = cin // group * k * k
        weight = self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in)
        bias = self.rng.uniform(-0.1, 0.1, cout)
        (y,) = self.node(
            "Conv",
            [x, self.const(weight.astype(np.float32)), self.const(bias.astype(np.float32), "b")],
            kernel_shape=[k, k],
            strides=[stride, stride],
            pads=[k // 2 if pad is None else pad] * 4,
            group=group,
        )
        return self.act(y, act)

    def act(self, x: str, act: str | None) -> str:
        if act is None:
            return x
        if act == "relu":
            return self.node("Relu", [x])[0]
        if act == "relu6":
            low = self.const(np.array(0.0, np.float32), "c")
            high = self.const(np.array(6.0, np.float32), "c")
            return self.node("Clip", [x, low, high])[0]
        if act == "sigmoid":
            return self.node("Sigmoid", [x])[0]
        raise ValueError(f"unknown activation {act!r}")

    def gemm(self, x: str, cin: int, cout: int) -> str:
        weight = self.rng.standard_normal((cout, cin)) * np.sqrt(1.0 / cin)
        bias = self.rng.uniform(-0.1, 0.1, cout)
        return self.node(
            "Gemm",
            [x, self.const(weight.astype(np.float32)), self.const(bias.astype(np.float32), "b")],
            transB=1,
        )[0]

    def matmul(self, x: str, cin: int, cout: int) -> str:
        weight = self.rng.standard_normal((cin, cout)) * np.sqrt(1.0 / cin)
        bias = self.rng.uniform(-0.1, 0.1, cout)
        (y,) = self.node("MatMul", [x, self.const(weight.astype(np.float32))])
        return self.node("Add", [y, self.const(bias.astype(np.float32), "b")])[0]

    def maxpool(self, x: str, k: int = 3, stride: int = 2) -> str:
        return self.node(
            "MaxPool", [x], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4
        )[0]

    def global_pool_flat(self, x: str) -> str:
        (pooled,) = self.node("GlobalAveragePool", [x])
        return self.node("Flatten", [pooled], axis=1)[0]

    def reshape(self, x: str, shape: Sequence[int]) -> str:
        return self.node("Reshape", [x, self.const(np.array(shape, np.int64), "shape")])[0]

    def transpose(self, x: str, perm: Sequence[int]) -> str:
        return self.node("Transpose", [x], perm=list(perm))[0]

    def upsample2(self, x: str) -> str:
        scales = self.const(np.array([1.0, 1.0, 2.0, 2.0], np.float32), "scales")
        return self.node("Resize", [x, "", scales], mode="nearest")[0]

    def layernorm(self, x: str, width: int) -> str:
        """LayerNorm over the last axis, written out (opset 13 has no LayerNormalization)."""
        (mean,) = self.node("ReduceMean", [x], axes=[-1], keepdims=1)
        (centred,) = self.node("Sub", [x, mean])
        (square,) = self.node("Mul", [centred, centred])
        (var,) = self.node("ReduceMean", [square], axes=[-1], keepdims=1)
        (shifted,) = self.node("Add", [var, self.const(np.array(1e-5, np.float32), "eps")])
        (std,) = self.node("Sqrt", [shifted])
        (normed,) = self.node("Div", [centred, std])
        gamma = self.const(self.rng.uniform(0.8, 1.2, width).astype(np.float32), "gamma")
        (scaled,) = self.node("Mul", [normed, gamma])
        beta = self.const(self.rng.uniform(-0.1, 0.1, width).astype(np.float32), "beta")
        return self.node("Add", [scaled, beta])[0]

    # -- the model ----------------------------------------------------------------------------

    def model(self, outputs: Sequence[tuple[str, Sequence[int], int]]) -> onnx.ModelProto:
        """The finished model; ``outputs`` are (tensor, shape, ONNX element type)."""
        values = []
        for index, (tensor, shape, elem) in enumerate(outputs):
            name = "output" if len(outputs) == 1 else f"output{index}"
            self.nodes.append(helper.make_node("Identity", [tensor], [name], name=f"out_{index}"))
            values.append(helper.make_tensor_value_info(name, elem, list(shape)))
        graph = helper.make_graph(
            self.nodes, self.name, self.inputs, values, initializer=self.initializers
        )
        model = helper.make_model(
            graph,
            producer_name="npu-hil zoo",
            opset_imports=[helper.make_opsetid("", OPSET)],
            ir_version=IR_VERSION,
        )
        onnx.checker.check_model(model, full_check=True)
        return model


FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64
