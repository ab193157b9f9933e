"""The model as an NPU computes it: int8 (QDQ static quantization, what rknn-toolkit2's default
``asymmetric_quantized-8`` with per-channel weights does) or float16 through the whole graph,
made once per (model, calibration). The simulated board and the host's expectation compute the
same model on the same inputs, so they agree bit for bit: docs/model-developer/figures.md, "How
a simulated board computes".
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import tempfile
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.models.reference import input_dtypes


class NumericsError(NpuHilError):
    """A model that cannot be computed with the NPU's numerics here."""


_CACHE_SIZE = 2
_MADE: OrderedDict[str, onnx.ModelProto] = OrderedDict()


def _key(proto: onnx.ModelProto, numerics: str, samples: Sequence[Mapping[str, np.ndarray]]) -> str:
    digest = hashlib.sha256(numerics.encode())
    digest.update(proto.SerializeToString())
    for sample in samples:
        for name in sorted(sample):
            digest.update(name.encode())
            digest.update(np.ascontiguousarray(sample[name], dtype=np.float32).tobytes())
    return digest.hexdigest()


def numeric_model(
    proto: onnx.ModelProto, numerics: str, samples: Sequence[Mapping[str, np.ndarray]]
) -> onnx.ModelProto:
    """``proto`` as the NPU computes it (``numerics``), calibrated on ``samples`` for int8."""
    if numerics == "float":
        return proto
    key = _key(proto, numerics, samples if numerics == "int8" else ())
    made = _MADE.get(key)
    if made is None:
        made = int8_graph(proto, samples) if numerics == "int8" else float16_graph(proto)
        _MADE[key] = made
        while len(_MADE) > _CACHE_SIZE:
            _MADE.popitem(last=False)
    else:
        _MADE.move_to_end(key)
    return made


class _Samples:
    """onnxruntime's CalibrationDataReader protocol over a list of input mappings, each input
    in the dtype the model declares (uint8 pixels for a model with its normalization in front)."""

    def __init__(
        self, samples: Sequence[Mapping[str, np.ndarray]], dtypes: Mapping[str, np.dtype]
    ) -> None:
        self._items = iter([{k: _as(v, dtypes.get(k)) for k, v in s.items()} for s in samples])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._items, None)

    def rewind(self) -> None:  # onnxruntime asks for it in some versions; one pass is enough
        return None


def _as(value: np.ndarray, dtype: np.dtype | None) -> np.ndarray:
    """``value`` in ``dtype`` (float32 when None), integers rounded rather than truncated."""
    wanted = np.dtype(np.float32 if dtype is None else dtype)
    if wanted.kind in "iu" and np.asarray(value).dtype.kind == "f":
        value = np.rint(value)
    return np.ascontiguousarray(value, dtype=wanted)


def int8_graph(
    proto: onnx.ModelProto, samples: Sequence[Mapping[str, np.ndarray]]
) -> onnx.ModelProto:
    """The QDQ int8 model onnxruntime's static quantization makes of ``proto``."""
    if not samples:
        raise NumericsError("int8 through the graph needs calibration samples")
    try:
        quantization: Any = importlib.import_module("onnxruntime.quantization")
    except ImportError as exc:
        raise NumericsError(
            f"int8 through the graph needs onnxruntime's quantization ({exc}); "
            "install onnxruntime or run with numerics: float"
        ) from None
    named = onnx.ModelProto()
    named.CopyFrom(proto)
    for index, node in enumerate(named.graph.node):
        node.name = node.name or f"{node.op_type.lower()}_{index}"
    # A private folder: the quantizer works on files. Its advice to pre-process the model goes
    # to the root logger; it is not for the harness's user.
    muted = logging.root.manager.disable
    logging.disable(logging.WARNING)
    # Its calibration sessions log at onnxruntime's default level (warnings about initializers
    # it drops): errors only, as the harness's own sessions (models.reference).
    importlib.import_module("onnxruntime").set_default_logger_severity(3)
    try:
        with tempfile.TemporaryDirectory(prefix="npu-hil-quant-") as folder:
            return _quantize(quantization, named, Path(folder), samples)
    finally:
        logging.disable(muted)


def _quantize(
    quantization: Any, proto: onnx.ModelProto, folder: Path, samples: Sequence[Any]
) -> onnx.ModelProto:
    source = folder / "float.onnx"
    target = folder / "int8.onnx"
    onnx.save_model(proto, str(source))
    quantization.quantize_static(
        str(source),
        str(target),
        _Samples(samples, input_dtypes(proto)),
        quant_format=quantization.QuantFormat.QDQ,
        per_channel=True,
        activation_type=quantization.QuantType.QInt8,
        weight_type=quantization.QuantType.QInt8,
        calibrate_method=quantization.CalibrationMethod.MinMax,
        extra_options={"ActivationSymmetric": False, "WeightSymmetric": True},
        # Compilers keep Softmax in float16 (rknn-toolkit2: deviation softmax-output-type).
        nodes_to_exclude=[n.name for n in proto.graph.node if n.op_type == "Softmax"],
    )
    return onnx.load_model(str(target))


def float16_graph(proto: onnx.ModelProto) -> onnx.ModelProto:
    """``proto`` with float weights rounded to float16 and every float activation passed
    through a float16 Cast pair (the computation itself stays float32, as the NPU's
    accumulators are)."""
    model = onnx.ModelProto()
    model.CopyFrom(proto)
    graph = model.graph
    for init in graph.initializer:
        if init.data_type == TensorProto.FLOAT:
            rounded = numpy_helper.to_array(init).astype(np.float16).astype(np.float32)
            init.CopyFrom(numpy_helper.from_array(rounded, init.name))
    inferred = onnx.shape_inference.infer_shapes(model)
    floats = {
        v.name
        for v in (*inferred.graph.value_info, *inferred.graph.output, *inferred.graph.input)
        if v.type.tensor_type.elem_type == TensorProto.FLOAT
    }
    nodes: list[onnx.NodeProto] = []
    renamed: dict[str, str] = {}
    outputs = {o.name for o in graph.output}
    for index, node in enumerate(graph.node):
        for k, name in enumerate(node.input):
            if name in renamed:
                node.input[k] = renamed[name]
        nodes.append(node)
        for k, name in enumerate(node.output):
            if name not in floats:
                continue
            raw = f"{name}__fp32_{index}"
            node.output[k] = raw
            half = f"{name}__fp16_{index}"
            nodes.append(helper.make_node("Cast", [raw], [half], to=TensorProto.FLOAT16))
            final = name if name in outputs else f"{name}__r_{index}"
            nodes.append(helper.make_node("Cast", [half], [final], to=TensorProto.FLOAT))
            if final != name:
                renamed[name] = final
    del graph.node[:]
    graph.node.extend(nodes)
    return model
