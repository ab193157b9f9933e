"""Fake ``hobot_dnn.pyeasy_dnn`` that behaves as the RDK X5 build (hobot-dnn-rdkx5 3.0.6) does,
as read from that wheel's aarch64 extension (its symbols and machine code; no code of it is here):

- ``load(model_file)`` -> list of ``Model``; ``Model.name``, ``.inputs``, ``.outputs``,
  ``.forward(arg, core_id=0, priority=0)``; tensors with ``.name``, ``.properties``, ``.buffer``;
  ``TensorProperties`` with ``tensor_type``, ``dtype``, ``layout``, ``shape``, ``alignedShape``,
  ``validShape`` and ``scale_data``. Failures raise RuntimeError.
- ``tensor_type`` is the hbDNNDataType's name (``int8``, ``float16``, ``NV12`` ...); ``dtype`` the
  same, except ``uint8`` for image types.
- ``alignedShape`` / ``validShape`` are integers: the address of a fresh heap copy of the 36-byte
  hbDNNTensorShape (8 int32 dims, then numDimensions), never freed.
- ``.buffer`` is a numpy array of the first four validShape dimensions; its element type is
  float32, int32 or int16 for F32, S32 and S16 tensors, int8 for every other type, and it holds
  that many elements of that size copied from the start of the aligned device buffer: padding
  is not removed, and 2-, 4- and 8-byte types other than those three lose bytes.

The model file is text: ``FAKE-HBM shape=1,3,4,5 aligned=1,3,4,8 type=int8`` (type: a
tensor_type name). The model is an identity; its output lives in an aligned buffer.

Test controls: ``FAULTS`` (load, forward) and ``QUIRKS`` (``tuple_shapes``: alignedShape and
validShape come back as tuples, as a build that fixed them would).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

FAULTS: set[str] = set()
QUIRKS: set[str] = set()

# hbDNNDataType order of the X3/X5 hb_dnn.h, under the extension's names.
TYPE_NAMES = (
    "Y",
    "NV12",
    "NV12_SEPARATE",
    "YUV444",
    "RGB",
    "BGR",
    "int4",
    "uint4",
    "int8",
    "uint8",
    "float16",
    "int16",
    "uint16",
    "float32",
    "int32",
    "uint32",
    "float64",
    "int64",
    "uint64",
)
IMAGE_TYPES = TYPE_NAMES[:6]
# What .buffer's element type is, by tensor type; every other type comes back as int8.
BUFFER_TYPES = {"float32": np.float32, "int32": np.int32, "int16": np.int16}
MAX_DIMS = 8


class _Shape(ctypes.Structure):
    _fields_ = [("dimensionSize", ctypes.c_int32 * MAX_DIMS), ("numDimensions", ctypes.c_int32)]


_LEAKED: list[_Shape] = []  # the extension never frees its copies; neither does the fake


def _shape_pointer(dims: tuple[int, ...]) -> int:
    copy = _Shape()
    copy.numDimensions = len(dims)
    for i, d in enumerate(dims):
        copy.dimensionSize[i] = d
    _LEAKED.append(copy)
    return ctypes.addressof(copy)


def _numpy_type(tensor_type: str) -> np.dtype:
    # Images and (here, one byte each) 4-bit types are bytes; numpy reads "int4" as int32.
    if tensor_type in IMAGE_TYPES or tensor_type in ("int4", "uint4"):
        return np.dtype("uint8")
    return np.dtype(tensor_type)


class TensorProperties:
    def __init__(
        self, tensor_type: str, shape: tuple[int, ...], aligned: tuple[int, ...], scale: Any
    ) -> None:
        if tensor_type not in TYPE_NAMES:
            raise ValueError(f"fake: unknown tensor type {tensor_type!r}")
        self._type = tensor_type
        self._shape = shape
        self._aligned = aligned
        self._scale = scale

    @property
    def tensor_type(self) -> str:
        return self._type

    @property
    def dtype(self) -> str:
        return "uint8" if self._type in IMAGE_TYPES else self._type

    @property
    def layout(self) -> str:
        return "NCHW"

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def alignedShape(self) -> Any:
        return self._aligned if "tuple_shapes" in QUIRKS else _shape_pointer(self._aligned)

    @property
    def validShape(self) -> Any:
        return self._shape if "tuple_shapes" in QUIRKS else _shape_pointer(self._shape)

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


def buffer_of(properties: TensorProperties, device: bytes) -> np.ndarray:
    """``.buffer`` as the extension builds it from the device's aligned bytes."""
    dims = (*properties.shape, 0, 0, 0, 0)[:4]
    element = np.dtype(BUFFER_TYPES.get(properties.tensor_type, np.int8))
    count = int(np.prod(dims))
    head = device[: count * element.itemsize]
    return np.frombuffer(head, dtype=element).reshape(dims).copy()


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
        dtype = _numpy_type(self._type)
        x = np.asarray(arg[0])
        if x.size not in (int(np.prod(self._shape)), int(np.prod(self._shape)) * dtype.itemsize):
            raise RuntimeError(f"Error: Invalid data size ({x.size}) for input 0")
        if x.dtype != dtype:
            x = x.reshape(-1).view(np.uint8).view(dtype)
        # The device writes the identity into an aligned buffer, padding zero ...
        aligned = np.zeros(self._aligned, dtype=dtype)
        n, c, h, w = self._shape
        aligned[:n, :c, :h, :w] = x.reshape(self._shape)
        # ... and .buffer takes the head of it, with the element type the extension picks.
        props = self._outputs[0].properties
        out = PyDNNTensor("identity", props, buffer_of(props, aligned.tobytes()))
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
