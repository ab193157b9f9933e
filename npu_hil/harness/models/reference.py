"""Expected outputs of a reference model, computed on the host by onnxruntime.

Sessions are cached by the model's bytes, and every session runs single-threaded with the same
options, so the host's expectation and the simulated board (which runs its models through this
module) see bit-identical float outputs: a quantized value on a rounding boundary cannot land on
different sides on the two.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper

from npu_hil.harness.errors import NpuHilError

SESSION_CACHE_SIZE = 16
NUMERICS_CACHE_SIZE = 2
"""Sessions of NPU-numerics models (``optimized=False``): one per model and calibration, so a
new one per run on new inputs; a few are kept, and memory stays flat over a soak."""


class ModelInputError(NpuHilError, ValueError):
    """The inputs handed to a reference model do not match its declared inputs."""


_SESSIONS: OrderedDict[str, Any] = OrderedDict()
_NUMERICS_SESSIONS: OrderedDict[str, Any] = OrderedDict()


def model_bytes(model: onnx.ModelProto | str | os.PathLike[str]) -> bytes:
    if isinstance(model, onnx.ModelProto):
        data: bytes = model.SerializeToString()
        return data
    return Path(model).read_bytes()


def input_dtypes(model: onnx.ModelProto) -> dict[str, np.dtype]:
    """The numpy dtype of each graph input (initializers listed as inputs are left out)."""
    constants = {init.name for init in model.graph.initializer}
    return {
        value.name: np.dtype(helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type))
        for value in model.graph.input
        if value.name not in constants
    }


def session(model: onnx.ModelProto | str | os.PathLike[str], *, optimized: bool = True) -> Any:
    """An onnxruntime session for ``model``, cached by the model's sha256.

    ``optimized=False`` runs the graph as written, node by node: a quantize-dequantize (QDQ)
    model then computes int8 values exactly (float32 accumulation of integers below 2**24)
    instead of through onnxruntime's fused int8 kernels, whose 16-bit intermediate sums
    saturate on CPUs without VNNI."""
    onnxruntime: Any = importlib.import_module("onnxruntime")
    data = model_bytes(model)
    key = hashlib.sha256(data).hexdigest()
    cache, size = (
        (_SESSIONS, SESSION_CACHE_SIZE) if optimized else (_NUMERICS_SESSIONS, NUMERICS_CACHE_SIZE)
    )
    cached = cache.get(key)
    if cached is not None:
        cache.move_to_end(key)
        return cached
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if not optimized:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    created = onnxruntime.InferenceSession(
        data, sess_options=options, providers=["CPUExecutionProvider"]
    )
    cache[key] = created
    while len(cache) > size:
        cache.popitem(last=False)
    return created


def reference_outputs(
    model: onnx.ModelProto | str | os.PathLike[str],
    inputs: Mapping[str, np.ndarray],
    *,
    optimized: bool = True,
) -> dict[str, np.ndarray]:
    """Run ``model`` on ``inputs`` (name → array) with onnxruntime; returns name → output.

    Inputs are cast to the dtype the model declares (a uint8 image feeds a float model), and
    every declared input must be given, no other.
    """
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load_model(str(model))
    declared = input_dtypes(proto)
    missing = sorted(set(declared) - set(inputs))
    extra = sorted(set(inputs) - set(declared))
    if missing or extra:
        raise ModelInputError(
            f"model inputs are {', '.join(declared)}; "
            + (f"missing {', '.join(missing)}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"unknown {', '.join(extra)}" if extra else "")
        )
    feeds = {name: np.ascontiguousarray(inputs[name], dtype=declared[name]) for name in declared}
    runner = session(proto, optimized=optimized)
    names = [output.name for output in runner.get_outputs()]
    try:
        values = runner.run(names, feeds)
    except Exception as exc:  # onnxruntime raises its own classes for shape/type mismatches
        raise ModelInputError(f"onnxruntime refused the inputs: {exc}") from exc
    return {name: np.asarray(value) for name, value in zip(names, values, strict=True)}
