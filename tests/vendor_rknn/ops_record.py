"""Measure which ONNX operators rknn-toolkit2 builds for each Rockchip target group, one
operator a model, and keep it as test data: ``tests/data/zoo/rknn_ops.json.gz``; the refusals
the package reads (``npu_hil/targets/rockchip/operators.json``) are derived from it.

    python tests/vendor_rknn/ops_record.py [--out FILE] [--targets a,b] [--parallel 2]

Run where the ``rknn`` extra and the toolkit are installed (the ``vendor-rknn`` tox env). Each
model is one node on a 1x8x16x16 float input (opset 17) at the target's default precision, with
one calibration sample of positive values; "built" means the compiler made a model file of it
(the NPU or the runtime's CPU fallback runs it), "refused" carries the compiler's error line.
Variants named "<op> without <attribute>" leave out an attribute ONNX gives a default.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from measured import operators_document_of
from onnx import TensorProto, helper, numpy_helper, shape_inference
from rknn_probe import probe, probe_job

from npu_hil.targets.rockchip.compiler.build import (
    TOOLKIT,
    BuildJob,
    toolkit_version,
)
from npu_hil.targets.rockchip.operators import DATA

TARGETS = ("rk3566", "rk3588", "rk3562", "rk3576", "rv1106", "rv1106b", "rk2118")
OUT = Path(__file__).resolve().parents[1] / "data" / "zoo" / "rknn_ops.json.gz"
SHAPE = (1, 8, 16, 16)
Init = list[onnx.TensorProto]


def _const(name: str, value: Any, dtype: Any = np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def _weights(*shape: int) -> np.ndarray:
    return np.random.default_rng(7).standard_normal(shape).astype(np.float32) * 0.1


def _unary(op: str, **attrs: Any) -> Callable[[], tuple[onnx.NodeProto, Init]]:
    return lambda: (helper.make_node(op, ["x"], ["y"], **attrs), [])


def _binary(op: str) -> Callable[[], tuple[onnx.NodeProto, Init]]:
    return lambda: (
        helper.make_node(op, ["x", "b"], ["y"]),
        [_const("b", np.full(SHAPE, 0.5, np.float32))],
    )


def _with(
    op: str, inputs: Sequence[tuple[str, Any, Any]], **attrs: Any
) -> Callable[[], tuple[onnx.NodeProto, Init]]:
    """``op`` on x and constant inputs ``(name, value, dtype)`` (an empty name: omitted)."""

    def make() -> tuple[onnx.NodeProto, Init]:
        names = ["x", *(name for name, _, _ in inputs)]
        consts = [_const(name, value, dtype) for name, value, dtype in inputs if name]
        return helper.make_node(op, names, ["y"], **attrs), consts

    return make


OPS: dict[str, Callable[[], tuple[onnx.NodeProto, Init]]] = {
    "Abs": _unary("Abs"),
    "Add": _binary("Add"),
    "ArgMax": _unary("ArgMax", axis=1, keepdims=1),
    "AveragePool": _unary("AveragePool", kernel_shape=[2, 2], strides=[2, 2]),
    "BatchNormalization": _with(
        "BatchNormalization",
        [
            ("s", np.ones(8), np.float32),
            ("bb", np.zeros(8), np.float32),
            ("m", np.zeros(8), np.float32),
            ("v", np.ones(8), np.float32),
        ],
    ),
    "Cast": _unary("Cast", to=TensorProto.FLOAT16),
    "Ceil": _unary("Ceil"),
    "Clip": _with("Clip", [("lo", 0.0, np.float32), ("hi", 6.0, np.float32)]),
    "Concat": lambda: (helper.make_node("Concat", ["x", "x"], ["y"], axis=1), []),
    "Conv": _with("Conv", [("w", _weights(8, 8, 3, 3), np.float32)], pads=[1, 1, 1, 1]),
    "ConvTranspose": _with(
        "ConvTranspose", [("w", _weights(8, 8, 2, 2), np.float32)], strides=[2, 2]
    ),
    "Cos": _unary("Cos"),
    "CumSum": _with("CumSum", [("a", 1, np.int64)]),
    "DepthToSpace": _unary("DepthToSpace", blocksize=2),
    "Div": _binary("Div"),
    "Elu": _unary("Elu"),
    "Equal": _binary("Equal"),
    "Erf": _unary("Erf"),
    "Exp": _unary("Exp"),
    "Expand": _with("Expand", [("s", [2, 8, 16, 16], np.int64)]),
    "Flatten": _unary("Flatten", axis=1),
    "Floor": _unary("Floor"),
    "Gather": _with("Gather", [("i", [0, 2, 4], np.int64)], axis=1),
    "Gemm": lambda: (
        helper.make_node("Gemm", ["f", "w"], ["y"], transB=1),
        [_const("w", _weights(10, 8 * 16 * 16))],
    ),
    "GlobalAveragePool": _unary("GlobalAveragePool"),
    "GlobalMaxPool": _unary("GlobalMaxPool"),
    "Greater": _binary("Greater"),
    "GridSample": _with("GridSample", [("g", np.zeros((1, 16, 16, 2)), np.float32)]),
    "HardSigmoid": _unary("HardSigmoid"),
    "HardSwish": _unary("HardSwish"),
    "InstanceNormalization": _with(
        "InstanceNormalization", [("s", np.ones(8), np.float32), ("bb", np.zeros(8), np.float32)]
    ),
    "LRN": _unary("LRN", size=3),
    "LayerNormalization": _with(
        "LayerNormalization",
        [("s", np.ones(16), np.float32), ("bb", np.zeros(16), np.float32)],
        axis=-1,
        epsilon=1e-5,
    ),
    # The same with ONNX's default epsilon left out, as some exporters write it.
    "LayerNormalization without epsilon": _with(
        "LayerNormalization",
        [("s", np.ones(16), np.float32), ("bb", np.zeros(16), np.float32)],
        axis=-1,
    ),
    "LeakyRelu": _unary("LeakyRelu", alpha=0.1),
    "Less": _binary("Less"),
    "Log": _unary("Log"),
    "LogSoftmax": _unary("LogSoftmax", axis=1),
    "MatMul": _with("MatMul", [("w", _weights(16, 16), np.float32)]),
    "Max": _binary("Max"),
    "MaxPool": _unary("MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
    "Min": _binary("Min"),
    "Mul": _binary("Mul"),
    "Neg": _unary("Neg"),
    "PRelu": _with("PRelu", [("s", np.full((8, 1, 1), 0.1), np.float32)]),
    "Pad": _with("Pad", [("p", [0, 0, 1, 1, 0, 0, 1, 1], np.int64)]),
    "Pow": _binary("Pow"),
    "Reciprocal": _unary("Reciprocal"),
    "ReduceMax": _unary("ReduceMax", axes=[1], keepdims=1),
    "ReduceMean": _unary("ReduceMean", axes=[1], keepdims=1),
    "ReduceMin": _unary("ReduceMin", axes=[1], keepdims=1),
    "ReduceSum": _with("ReduceSum", [("a", [1], np.int64)]),
    "Relu": _unary("Relu"),
    "Reshape": _with("Reshape", [("s", [1, 16, 8, 16], np.int64)]),
    "Resize": _with("Resize", [("", None, None), ("sc", [1, 1, 2, 2], np.float32)], mode="nearest"),
    "Round": _unary("Round"),
    "ScatterND": _with(
        "ScatterND",
        [("i", [[0, 0]], np.int64), ("u", np.zeros((1, 16, 16)), np.float32)],
    ),
    "Selu": _unary("Selu"),
    "Sigmoid": _unary("Sigmoid"),
    "Sin": _unary("Sin"),
    "Slice": _with("Slice", [("st", [0], np.int64), ("en", [4], np.int64), ("ax", [1], np.int64)]),
    "Softmax": _unary("Softmax", axis=1),
    "Softplus": _unary("Softplus"),
    "SpaceToDepth": _unary("SpaceToDepth", blocksize=2),
    "Split": lambda: (
        helper.make_node("Split", ["x", "sp"], ["y", "y2"], axis=1),
        [_const("sp", [4, 4], np.int64)],
    ),
    "Sqrt": _unary("Sqrt"),
    "Squeeze": lambda: (
        helper.make_node("Squeeze", ["r", "a"], ["y"]),
        [_const("a", [1], np.int64)],
    ),
    "Sub": _binary("Sub"),
    "Tanh": _unary("Tanh"),
    "Tile": _with("Tile", [("rep", [1, 2, 1, 1], np.int64)]),
    "TopK": lambda: (
        helper.make_node("TopK", ["x", "k"], ["y", "y2"], axis=1),
        [_const("k", [3], np.int64)],
    ),
    "Transpose": _unary("Transpose", perm=[0, 2, 3, 1]),
    "Unsqueeze": _with("Unsqueeze", [("a", [0], np.int64)]),
    "Where": lambda: (
        helper.make_node("Where", ["c", "x", "b"], ["y"]),
        [_const("b", np.zeros(SHAPE)), _const("c", np.ones(SHAPE, bool), bool)],
    ),
}
"""One model per operator: the node, and the constants it takes."""


def model_of(op: str) -> onnx.ModelProto:
    node, consts = OPS[op]()
    nodes = [node]
    # Operators on other shapes: a Flatten in front of Gemm, a ReduceMean in front of Squeeze.
    if "f" in node.input:
        nodes.insert(0, helper.make_node("Flatten", ["x"], ["f"], axis=1))
    if "r" in node.input:
        nodes.insert(0, helper.make_node("ReduceMean", ["x"], ["r"], axes=[1], keepdims=1))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))
    y = helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)
    extra = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output[1:]]
    graph = helper.make_graph(nodes, f"op_{op}", [x], [y, *extra], consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    inferred = shape_inference.infer_shapes(model, strict_mode=True)
    return inferred


def _job(folder: Path, target: str, op: str) -> BuildJob:
    # Positive values: Log, Sqrt and Pow of a negative sample are NaN, which the int8
    # calibration cannot take (a refusal of the sample, not of the operator).
    sample = np.random.default_rng(1).uniform(0.1, 2.0, SHAPE).astype(np.float32)
    return probe_job(folder, f"op_{op.replace(' ', '_')}", model_of(op), target, sample)


def measure(targets: Sequence[str], parallel: int) -> list[dict[str, Any]]:
    records = []
    with tempfile.TemporaryDirectory(prefix="npu-hil-ops-") as scratch:
        folder = Path(scratch)
        for target in targets:
            jobs = [_job(folder, target, op) for op in OPS]
            for op, job, reason in zip(OPS, jobs, probe(jobs, parallel), strict=True):
                records.append(
                    {
                        "target": target,
                        "precision": job.precision,
                        "op": op,
                        "built": reason is None,
                        "reason": reason,
                    }
                )
            refused = sum(not r["built"] for r in records if r["target"] == target)
            print(f"{target}: {len(OPS)} operators, {refused} refused", file=sys.stderr)
    return records


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--package", type=Path, default=DATA)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args(argv)
    records = measure(args.targets.split(","), args.parallel)
    provenance = {
        "compiler": f"{TOOLKIT} {toolkit_version()}",
        "model": (
            "one operator a model on a 1x8x16x16 float input, opset 17, default precision per "
            "target, one calibration sample (uniform 0.1-2.0)"
        ),
        "made_by": "python tests/vendor_rknn/ops_record.py",
    }
    with gzip.open(args.out, "wt", encoding="utf-8") as out:
        json.dump({"provenance": provenance, "records": records}, out, indent=1)
    derived = operators_document_of(
        records, {**provenance, "records": "tests/data/zoo/rknn_ops.json.gz"}
    )
    args.package.write_text(json.dumps(derived, indent=1) + "\n", encoding="utf-8")
    print(f"{len(records)} records -> {args.out}; refusals -> {args.package}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
