"""Running the reference model on the simulated board: onnxruntime (the sessions of
:mod:`npu_hil.harness.models.reference`, so the host's expectation agrees bit for bit), or where
it is not installed a numpy path for the simplest graphs (:data:`SUPPORTED`; others refused).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping

import numpy as np
import onnx
from onnx import helper, numpy_helper

from npu_hil.harness.simkit.errors import SimRefusal

EXECUTORS = ("auto", "onnxruntime", "numpy")
SUPPORTED = ("Identity", "Conv (1x1, stride 1, no padding, group 1)", "Add", "Relu")


def resolve(executor: str) -> str:
    """The executor to run (``executor`` as :class:`~npu_hil.harness.sim.options.SimOptions`
    checked it): ``auto`` is onnxruntime where it is importable."""
    if executor == "auto":
        return "onnxruntime" if importlib.util.find_spec("onnxruntime") else "numpy"
    return executor


def check(model: onnx.ModelProto, executor: str) -> None:
    """Load-time: refuse a graph the chosen executor cannot run."""
    if executor == "numpy":
        try:
            check_numpy(model)
        except NotSupportedByNumpy as exc:
            raise SimRefusal(
                "UnsupportedError", "load", f"{exc} (install onnxruntime to run this model)"
            ) from None


def run(
    model: onnx.ModelProto, inputs: Mapping[str, np.ndarray], executor: str, *, exact: bool = False
) -> dict[str, np.ndarray]:
    """The model's outputs; ``exact`` runs an onnxruntime graph node by node (a quantized
    graph's int8 arithmetic, :mod:`npu_hil.harness.sim.graphquant`)."""
    if executor == "numpy":
        return run_numpy(model, inputs)
    from npu_hil.harness.models.reference import reference_outputs

    return reference_outputs(model, inputs, optimized=not exact)


# ------------------------------------------------------------------------- the numpy path


class NotSupportedByNumpy(Exception):
    """The graph has a node the numpy path does not run."""


def _conv1x1(node: onnx.NodeProto, values: dict[str, np.ndarray]) -> np.ndarray:
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    weight = values[node.input[1]]
    one_by_one = weight.ndim == 4 and weight.shape[2:] == (1, 1)
    plain = (
        int(attrs.get("group", 1)) == 1
        and all(int(s) == 1 for s in attrs.get("strides", [1, 1]))
        and all(int(p) == 0 for p in attrs.get("pads", [0, 0, 0, 0]))
        and attrs.get("auto_pad", b"NOTSET") in (b"NOTSET", "NOTSET", b"VALID", "VALID")
    )
    if not (one_by_one and plain):
        raise NotSupportedByNumpy(f"node {node.name or node.op_type}: only 1x1 Conv, stride 1")
    x = values[node.input[0]]
    out = np.einsum("mc,nchw->nmhw", weight[:, :, 0, 0], x, dtype=np.float32)
    if len(node.input) > 2 and node.input[2]:
        out += values[node.input[2]].reshape(1, -1, 1, 1)
    result: np.ndarray = out.astype(np.float32)
    return result


def check_numpy(model: onnx.ModelProto) -> None:
    """Raise NotSupportedByNumpy unless every node is one the interpreter runs."""
    weights = {init.name: tuple(init.dims) for init in model.graph.initializer}
    for node in model.graph.node:
        supported = node.op_type in ("Identity", "Conv", "Add", "Relu")
        if node.op_type == "Conv":
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            kernel = tuple(attrs.get("kernel_shape", weights.get(node.input[1], (0, 0, 0))[2:]))
            supported = kernel == (1, 1) and int(attrs.get("group", 1)) == 1
        if not supported:
            raise NotSupportedByNumpy(
                f"node {node.name or node.op_type} ({node.op_type}) is not one the numpy path "
                f"runs: {', '.join(SUPPORTED)}"
            )


def run_numpy(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run the graph in node order (ONNX graphs are topologically sorted)."""
    check_numpy(model)
    values: dict[str, np.ndarray] = {
        init.name: numpy_helper.to_array(init) for init in model.graph.initializer
    }
    values.update({name: np.asarray(v, dtype=np.float32) for name, v in inputs.items()})
    for node in model.graph.node:
        if node.op_type == "Identity":
            result = values[node.input[0]]
        elif node.op_type == "Conv":
            result = _conv1x1(node, values)
        elif node.op_type == "Add":
            result = np.add(values[node.input[0]], values[node.input[1]], dtype=np.float32)
        else:
            result = np.maximum(values[node.input[0]], np.float32(0))
        values[node.output[0]] = result
    return {out.name: values[out.name] for out in model.graph.output}
