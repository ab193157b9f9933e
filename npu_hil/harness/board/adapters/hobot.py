"""``hobot``: Horizon / D-Robotics ``pyeasy_dnn`` (``hobot_dnn``, ``hobot_dnn_rdkx5``), numerical
results only, with caveats. What the X5 build 3.0.6's ``.buffer`` and shapes are, and the options:
``docs/runtime/agent.md`` (Adapters).
"""

from __future__ import annotations

import ctypes
import importlib
from dataclasses import dataclass
from typing import Any

import numpy as np

# Relative: loaded as adapters.<name> or npu_hil...adapters.<name>, the base is the one beside it.
from .base import (
    Adapter,
    AdapterError,
    InputTensor,
    RunOutput,
    TensorOut,
    package_version,
    pick_model,
    pick_outputs,
    timed,
    vendor_call,
)

# The X3/X5 header's hbDNNTensorShape (8 int32 dimensions, then numDimensions: 36 bytes).
from .hobot_native import IMAGE_TYPES, NUMBER_TYPES, NUMPY_TYPES, X3X5_MAX_DIMS, TensorShapeX3X5

MODULES = ("hobot_dnn.pyeasy_dnn", "hobot_dnn_rdkx5.pyeasy_dnn")
DISTRIBUTIONS = ("hobot-dnn-rdkx5", "hobot-dnn")
PASS_THROUGH_TYPES = ("NV12", "NV12_SEPARATE", "Y")
# What .buffer's element type is on the X5 build 3.0.6, by tensor_type; everything else is int8.
BUFFER_TYPES_X5_3_0_6 = {"float32": "float32", "int32": "int32", "int16": "int16"}
# tensor_type names with a numpy element type of the same name (images are bytes).
ELEMENT_TYPES = [NUMPY_TYPES[t] for t in NUMBER_TYPES[2:]]
FOUR_BIT_TYPES = ("int4", "uint4")


def _shape(value: Any, pointers: bool = True) -> list[int] | None:
    """A shape from the extension: a sequence, or (the X5 build) the address of its own copy of
    the hbDNNTensorShape, read when ``pointers``; None when it is neither."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, np.integer)):
        address = int(value)
        if not pointers or address <= 0 or address % ctypes.alignment(TensorShapeX3X5):
            return None
        shape = TensorShapeX3X5.from_address(address)
        count = int(shape.numDimensions)
        dims = [int(d) for d in shape.dimensionSize[: max(0, min(count, X3X5_MAX_DIMS))]]
        if not 0 < count <= X3X5_MAX_DIMS or any(d < 0 for d in dims):
            return None
        return dims
    try:
        return [int(d) for d in value]
    except (TypeError, ValueError):
        return None


def _plain(value: Any) -> Any:
    """JSON-friendly copy of an attribute the extension returned."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.generic,)):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def properties_record(props: Any, pointers: bool = True) -> dict[str, Any]:
    """What pyeasy_dnn's TensorProperties says, under its own attribute names."""
    record: dict[str, Any] = {}
    for name in ("tensor_type", "dtype", "layout"):
        value = getattr(props, name, None)
        record[name] = None if value is None else str(value)
    for name in ("shape", "validShape", "alignedShape"):
        raw = getattr(props, name, None)
        shape = _shape(raw, pointers)
        record[name] = shape
        if isinstance(raw, (int, np.integer)) and not isinstance(raw, bool):
            # Say where the shape came from: the extension's pointer, read or not.
            record[name + "_raw"] = _plain(raw)
            record[name + "_from"] = "pointer" if shape is not None else "unread pointer"
    record["scale_data"] = _plain(getattr(props, "scale_data", None))
    return record


@dataclass
class HobotModel:
    path: str
    model: Any
    input_types: list[str]
    released: bool = False


class HobotAdapter(Adapter):
    """pyeasy_dnn load/forward; numerical results with honest caveats."""

    name = "hobot"
    log_level_env = "HB_DNN_LOG_LEVEL"  # libdnn reads it: 0 (verbose) .. 6; default 3 (warnings)
    canary_reason = (
        "hobot_dnn (pyeasy_dnn) forward() returns output tensors the runtime allocates "
        "during the run; use hobot_native, whose memories the adapter allocates, for the "
        "canary check."
    )

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__(options)
        self._module: Any = None
        self._versions: dict[str, str] = {}

    def dnn(self) -> Any:
        if self._module is not None:
            return self._module
        given = self.options.get("module")
        candidates = [str(given)] if given else list(MODULES)
        errors = []
        for name in candidates:
            try:
                self._module = importlib.import_module(name)
            except ImportError as exc:
                errors.append(f"{name}: {exc}")
                continue
            self._versions["module"] = name
            self._versions.update(
                {dist: package_version(dist) for dist in DISTRIBUTIONS if package_version(dist)}
            )
            return self._module
        raise AdapterError(
            "UnsupportedError",
            "init",
            "pyeasy_dnn is not importable here (" + "; ".join(errors) + ")",
        )

    def versions(self) -> dict[str, str]:
        self.dnn()
        return dict(self._versions)

    def load(self, model_path: str) -> HobotModel:
        dnn = self.dnn()
        models = vendor_call(lambda: list(dnn.load(model_path)), "load", "pyeasy_dnn.load")
        if not models:
            raise AdapterError(
                "DeviceError", "load", f"pyeasy_dnn.load({model_path!r}) gave no model"
            )
        names = [str(getattr(m, "name", "")) for m in models]
        model = models[pick_model(names, self.options.get("model_name"), model_path)]
        input_types = [
            str(getattr(t.properties, "tensor_type", "")) for t in getattr(model, "inputs", [])
        ]
        return HobotModel(path=model_path, model=model, input_types=input_types)

    def release(self, model: Any) -> None:
        # pyeasy_dnn frees a model when the object goes; dropping the reference is the release.
        if isinstance(model, HobotModel):
            model.released = True
            model.model = None

    def run(self, model: Any, inputs: list[InputTensor], outputs: list[str] | None) -> RunOutput:
        self.loaded(model, HobotModel)
        timings: dict[str, float] = {}
        with timed(timings, "copy_s"):
            arrays = [self._array(inp) for inp in inputs]
        with timed(timings, "run_s"):
            core_id, priority = self.options.get("core_id", 0), self.options.get("priority", 0)
            results = vendor_call(
                lambda: model.model.forward(arrays, core_id=int(core_id), priority=int(priority)),
                "run",
                "Model.forward",
            )
        if not results:
            raise AdapterError("DeviceError", "run", "Model.forward returned no outputs")
        with timed(timings, "copy_s"):
            results = list(results)
            names = [str(getattr(r, "name", f"output{i}")) for i, r in enumerate(results)]
            wanted = pick_outputs(names, outputs)
            tensors = [self._tensor(names[i], results[i], model) for i in wanted]
        return RunOutput(inputs=[], outputs=tensors, timings=timings)

    def _array(self, inp: InputTensor) -> np.ndarray:
        if inp.pass_through:
            if inp.layout.upper() not in PASS_THROUGH_TYPES:
                raise AdapterError(
                    "LayoutError",
                    "run",
                    f"input {inp.name!r}: pyeasy_dnn takes logical tensors (it pads them "
                    f"itself); {inp.layout} bytes need hobot_native",
                )
            return np.ascontiguousarray(inp.data, dtype=np.uint8).reshape(-1)
        return np.ascontiguousarray(inp.logical())

    def _tensor(self, name: str, result: Any, model: HobotModel) -> TensorOut:
        pointers = bool(self.options.get("shape_pointers", True))
        record = properties_record(result.properties, pointers)
        buffer = np.ascontiguousarray(np.asarray(result.buffer))
        ttype = str(record["tensor_type"] or "")
        kind = ttype.lower()
        if kind.startswith("hb_dnn_tensor_type_"):  # (str.removeprefix needs Python 3.9)
            kind = kind[len("hb_dnn_tensor_type_") :]
        wanted = (
            "uint8" if ttype.upper() in IMAGE_TYPES else (kind if kind in ELEMENT_TYPES else None)
        )
        caveats = []
        faithful: bool | None = True
        if wanted is None:
            raise AdapterError(
                "UnsupportedError",
                "fetch",
                f"output {name!r}: tensor_type {ttype!r} has no numpy element type "
                f"({'4-bit' if kind in FOUR_BIT_TYPES else 'unknown'}); read it with hobot_native",
            )
        element = np.dtype(wanted)
        if buffer.dtype != element:
            if buffer.dtype.itemsize != element.itemsize:
                # .buffer holds one byte per element of a wider type: the rest is lost, and the
                # extension offers no other way to the device bytes.
                raise AdapterError(
                    "UnsupportedError",
                    "fetch",
                    f"output {name!r}: pyeasy_dnn's .buffer returns {ttype} data as "
                    f"{buffer.dtype} ({buffer.dtype.itemsize} byte(s) per element, "
                    f"{element.itemsize} needed): bytes are lost (X5 3.0.6 keeps element types "
                    f"only for {', '.join(BUFFER_TYPES_X5_3_0_6)}); read it with hobot_native",
                )
            # Same width, wrong type (U8 and images as int8): the bytes are right.
            caveats.append(f"{ttype} data returned as {buffer.dtype}, read as {element}")
            buffer = buffer.view(element)
        valid = record["validShape"] or record["shape"]
        aligned = record["alignedShape"]
        if aligned is None or record["validShape"] is None:
            faithful = None
            caveats.append("alignedShape/validShape not known: padding unknown")
        elif int(np.prod(aligned)) != int(np.prod(valid)):
            faithful = False
            caveats.append(
                ".buffer holds the first prod(validShape) elements of the aligned buffer "
                "(padding not removed)"
            )
        if valid is not None and len(valid) != 4:
            faithful = False
            caveats.append(
                f".buffer is always 4-D (the first four dimensions); validShape is {valid}"
            )
        if any(t.upper() in ("RGB", "BGR") for t in model.input_types):
            caveats.append("pyeasy_dnn subtracts 128 from RGB/BGR inputs inside (X5 build)")
        record.update(
            {
                "source": "pyeasy_dnn Model.forward .buffer",
                "numeric_only": True,
                "native_bytes": False,
                "inputs_read_back": False,
                "buffer_faithful": faithful,
                "caveats": caveats,
            }
        )
        return TensorOut(
            name=name,
            data=buffer.reshape(-1).view(np.uint8).copy(),
            layout=str(record["layout"] or "UNDEFINED"),
            dtype=str(buffer.dtype),
            shape=[int(d) for d in buffer.shape],
            attributes=record,
        )


ADAPTER = HobotAdapter
