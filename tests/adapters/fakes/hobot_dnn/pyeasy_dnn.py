"""Fake ``hobot_dnn.pyeasy_dnn`` with the surface of the RDK X5 build (hobot-dnn-rdkx5 3.0.x):
``load(model_file)`` -> list of ``Model``; ``Model.name``, ``.inputs``, ``.outputs``,
``.forward(arg, core_id=0, priority=0)``; tensors with ``.name``, ``.properties`` and
``.buffer``; ``TensorProperties`` with ``tensor_type``, ``dtype``, ``layout``, ``shape``,
``alignedShape``, ``validShape`` and ``scale_data``. Failures raise RuntimeError, as the
extension does.

The model file is text: ``FAKE-HBM shape=1,3,4,5 aligned=1,3,4,8 type=int8``. The model is an
identity; its output lives in an aligned buffer and, like the X5 build, ``.buffer`` copies
prod(validShape) elements from the start of that buffer without removing the padding, and
returns unsigned types as int8.

Test controls: ``FAULTS`` (load, forward) and ``QUIRKS`` (``pointer_shapes``: alignedShape and
validShape come back as a raw pointer int, as seen in the X5 source).
"""

from __future__ import annotations

from typing import Any

import numpy as np

FAULTS: set[str] = set()
QUIRKS: set[str] = set()


class TensorProperties:
    def __init__(
        self, tensor_type: str, shape: tuple[int, ...], aligned: tuple[int, ...], scale: Any
    ) -> None:
        self._type = tensor_type
        self._shape = shape
        self._aligned = aligned
        self._scale = scale

    @property
    def tensor_type(self) -> str:
        return self._type

    @property
    def dtype(self) -> str:
        return self._type

    @property
    def layout(self) -> str:
        return "NCHW"

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def alignedShape(self) -> Any:
        return id(self._aligned) if "pointer_shapes" in QUIRKS else self._aligned

    @property
    def validShape(self) -> Any:
        return id(self._shape) if "pointer_shapes" in QUIRKS else self._shape

    @property
    def scale_data(self) -> Any:
        return self._scale


class PyDNNTensor:
    def __init__(self, name: str, properties: TensorProperties, buffer: Any = None) -> None:
        self._name = name
        self._properties = properties
        self._buffer = buffer

    @property
    def name(self) -> str:
        return self._name

    @property
    def properties(self) -> TensorProperties:
        return self._properties

    @property
    def buffer(self) -> Any:
        return self._buffer


class Model:
    def __init__(self, name: str, shape: tuple[int, ...], aligned: tuple[int, ...], ttype: str):
        self._name = name
        self._shape = shape
        self._aligned = aligned
        self._type = ttype
        scale = np.array([0.5] * shape[1], dtype=np.float32)
        self._inputs = [PyDNNTensor("data", TensorProperties(ttype, shape, shape, np.array([])))]
        self._outputs = [PyDNNTensor("identity", TensorProperties(ttype, shape, aligned, scale))]

    @property
    def name(self) -> str:
        return self._name

    @property
    def inputs(self) -> list[PyDNNTensor]:
        return self._inputs

    @property
    def outputs(self) -> list[PyDNNTensor]:
        return self._outputs

    def forward(self, arg: Any, core_id: int = 0, priority: int = 0) -> list[PyDNNTensor]:
        if not isinstance(arg, (list, tuple)):
            raise TypeError("arg_obj is NOT a container.")
        if "forward" in FAULTS:
            raise RuntimeError("forward execution failed.")
        if len(arg) != len(self._inputs):
            raise RuntimeError("Error: Too many inputs for the model!")
        x = np.asarray(arg[0])
        if x.size != int(np.prod(self._shape)):
            raise RuntimeError(f"Error: Invalid data size ({x.size}) for input 0")
        # The device writes the identity into an aligned buffer, padding zero ...
        aligned = np.zeros(self._aligned, dtype=np.dtype(self._type))
        n, c, h, w = self._shape
        aligned[:n, :c, :h, :w] = x.reshape(self._shape)
        # ... and .buffer takes the first prod(validShape) elements of it, as int8.
        count = int(np.prod(self._shape))
        flat = aligned.reshape(-1)[:count]
        if flat.dtype.kind == "u":
            flat = flat.view(np.int8)
        out = PyDNNTensor("identity", self._outputs[0].properties, flat.reshape(self._shape))
        return [out]


def load(model_file: Any) -> list[Model]:
    if not isinstance(model_file, (str, list)):
        raise TypeError("model_file must be a string or a list of strings")
    if "load" in FAULTS:
        raise RuntimeError("hbDNNInitializeFromFiles failed")
    path = model_file if isinstance(model_file, str) else model_file[0]
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise RuntimeError("hbDNNInitializeFromFiles failed") from exc
    if not text.startswith("FAKE-HBM"):
        raise RuntimeError("hbDNNInitializeFromFiles failed")
    fields = dict(tok.partition("=")[::2] for tok in text.split()[1:])
    shape = tuple(int(v) for v in fields.get("shape", "1,3,4,5").split(","))
    aligned = tuple(int(v) for v in fields.get("aligned", "1,3,4,8").split(","))
    return [Model("fake_identity", shape, aligned, fields.get("type", "int8"))]
