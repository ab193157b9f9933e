"""Running the reference model on the simulated board: onnxruntime, or the numpy path.

``auto`` uses onnxruntime when it is importable (through :mod:`npu_hil.harness.models.reference`,
the same sessions the host's expectation uses, so the two agree bit for bit) and the numpy path
otherwise.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping

import numpy as np
import onnx

from npu_hil.harness.sim import numpy_exec
from npu_hil.harness.simkit.errors import SimConfigError, SimRefusal

EXECUTORS = ("auto", "onnxruntime", "numpy")


def onnxruntime_available() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None


def resolve(executor: str) -> str:
    if executor not in EXECUTORS:
        raise SimConfigError(f"executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if executor == "auto":
        return "onnxruntime" if onnxruntime_available() else "numpy"
    return executor


def check(model: onnx.ModelProto, executor: str) -> None:
    """Load-time: refuse a graph the chosen executor cannot run."""
    if executor == "numpy":
        try:
            numpy_exec.check(model)
        except numpy_exec.NotSupportedByNumpy as exc:
            raise SimRefusal(
                "UnsupportedError", "load", f"{exc} (install onnxruntime to run this model)"
            ) from None


def run(
    model: onnx.ModelProto, inputs: Mapping[str, np.ndarray], executor: str, *, exact: bool = False
) -> dict[str, np.ndarray]:
    """The model's outputs; ``exact`` runs an onnxruntime graph node by node (a quantized
    graph's int8 arithmetic, :mod:`npu_hil.harness.sim.graphquant`)."""
    if executor == "numpy":
        return numpy_exec.run(model, inputs)
    from npu_hil.harness.models.reference import reference_outputs

    return reference_outputs(model, inputs, optimized=not exact)
