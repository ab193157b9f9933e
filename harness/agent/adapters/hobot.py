"""``hobot``: Horizon / D-Robotics ``pyeasy_dnn`` (``hobot_dnn`` in RDK X3 images,
``hobot_dnn_rdkx5`` from the hobot-dnn-rdkx5 wheel on RDK X5).

Numerical results only, and even those with care: the X5 build's ``.buffer`` copies
prod(validShape) elements from the start of the aligned device buffer without removing the
padding, returns U8/U16/F16 data as int8, subtracts 128 from RGB/BGR inputs inside, and reports
alignedShape/validShape as a raw pointer int (``spec/vendor-runtimes.md``). pyeasy_dnn exposes no
stride, quantiType, zero point or alignedByteSize either. So every output says what it is
(``numeric_only``, ``native_bytes: false``) and whether its buffer can be trusted
(``buffer_faithful``: true, false, or null when the properties do not tell), with the reasons in
``caveats``. The raw aligned buffers come from ``hobot_native``.

Inputs are logical tensors (pyeasy_dnn pads them itself); pass-through is accepted only for NV12
and Y inputs, whose bytes are the image as the model takes it. No input buffers come back.

Options (``adapter_options``): ``module`` (import path, default: ``hobot_dnn.pyeasy_dnn`` then
``hobot_dnn_rdkx5.pyeasy_dnn``), ``model_name`` (when the artifact packs several models),
``core_id`` and ``priority`` (passed to ``forward``).

Board-side code: Python >= 3.8, standard library and numpy only.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

# Relative: the agent loads this as adapters.<name>, the harness as
# harness.agent.adapters.<name>; either way the base is the one beside it.
from .base import Adapter, AdapterError, InputTensor, RunOutput, TensorOut

MODULES = ("hobot_dnn.pyeasy_dnn", "hobot_dnn_rdkx5.pyeasy_dnn")
DISTRIBUTIONS = ("hobot-dnn-rdkx5", "hobot-dnn")
PASS_THROUGH_TYPES = ("NV12", "NV12_SEPARATE", "Y")
# tensor_type spellings whose data .buffer hands back as int8 on the X5 build.
WIDENED_TO_INT8 = ("uint8", "u8", "uint16", "u16", "float16", "f16")


def _error(kind: str, stage: str, message: str) -> AdapterError:
    return AdapterError(kind, stage, message)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _shape(value: Any) -> list[int] | None:
    """A shape from the extension, or None when it is not one (the X5 build hands out a raw
    pointer int for alignedShape/validShape)."""
    if isinstance(value, (int, np.integer)) or value is None:
        return None
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


def properties_record(props: Any) -> dict[str, Any]:
    """What pyeasy_dnn's TensorProperties says, under its own attribute names."""
    record: dict[str, Any] = {}
    for name in ("tensor_type", "dtype", "layout"):
        value = getattr(props, name, None)
        record[name] = None if value is None else str(value)
    for name in ("shape", "validShape", "alignedShape"):
        raw = getattr(props, name, None)
        shape = _shape(raw)
        record[name] = shape
        if shape is None and raw is not None:
            record[name + "_raw"] = _plain(raw)
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
            self._versions.update(_distribution_versions())
            return self._module
        raise _error(
            "UnsupportedError",
            "init",
            "pyeasy_dnn is not importable here (" + "; ".join(errors) + ")",
        )

    def versions(self) -> dict[str, str]:
        self.dnn()
        return dict(self._versions)

    def load(self, model_path: str) -> HobotModel:
        dnn = self.dnn()
        try:
            models = list(dnn.load(model_path))
        except Exception as exc:
            raise _error("DeviceError", "load", f"pyeasy_dnn.load: {_describe(exc)}") from exc
        if not models:
            raise _error("DeviceError", "load", f"pyeasy_dnn.load({model_path!r}) gave no model")
        names = [str(getattr(m, "name", "")) for m in models]
        wanted = self.options.get("model_name")
        if wanted is not None:
            if wanted not in names:
                raise _error(
                    "LayoutError", "load", f"model_name {wanted!r} not in {model_path} ({names})"
                )
            model = models[names.index(wanted)]
        elif len(models) == 1:
            model = models[0]
        else:
            raise _error(
                "LayoutError",
                "load",
                f"{model_path} packs {len(models)} models {names}: set model_name",
            )
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
        if not isinstance(model, HobotModel) or model.released:
            raise _error("DeviceError", "run", "model handle is not a loaded hobot model")
        start = time.perf_counter()
        arrays = [self._array(inp) for inp in inputs]
        copy_s = time.perf_counter() - start

        start = time.perf_counter()
        try:
            results = model.model.forward(
                arrays,
                core_id=int(self.options.get("core_id", 0)),
                priority=int(self.options.get("priority", 0)),
            )
        except Exception as exc:
            raise _error("DeviceError", "run", f"Model.forward: {_describe(exc)}") from exc
        run_s = time.perf_counter() - start
        if not results:
            raise _error("DeviceError", "run", "Model.forward returned no outputs")

        start = time.perf_counter()
        results = list(results)
        names = [str(getattr(r, "name", f"output{i}")) for i, r in enumerate(results)]
        wanted = list(range(len(results)))
        if outputs is not None:
            missing = [w for w in outputs if w not in names]
            if missing:
                raise _error("LayoutError", "fetch", f"outputs {missing} not in {names}")
            wanted = [names.index(w) for w in outputs]
        tensors = [self._tensor(names[i], results[i], model) for i in wanted]
        copy_s += time.perf_counter() - start
        return RunOutput(inputs=[], outputs=tensors, timings={"run_s": run_s, "copy_s": copy_s})

    def _array(self, inp: InputTensor) -> np.ndarray:
        if inp.pass_through:
            if inp.layout.upper() not in PASS_THROUGH_TYPES:
                raise _error(
                    "LayoutError",
                    "run",
                    f"input {inp.name!r}: pyeasy_dnn takes logical tensors (it pads them "
                    f"itself); {inp.layout} bytes need hobot_native",
                )
            return np.ascontiguousarray(inp.data, dtype=np.uint8).reshape(-1)
        return np.ascontiguousarray(inp.logical())

    def _tensor(self, name: str, result: Any, model: HobotModel) -> TensorOut:
        buffer = np.ascontiguousarray(np.asarray(result.buffer))
        record = properties_record(result.properties)
        caveats = []
        faithful: bool | None = True
        valid = record["validShape"] or record["shape"]
        aligned = record["alignedShape"]
        if aligned is None or valid is None:
            faithful = None
            caveats.append("alignedShape/validShape not reported as shapes: padding unknown")
        elif int(np.prod(aligned)) != int(np.prod(valid)):
            faithful = False
            caveats.append(
                ".buffer holds the first prod(validShape) elements of the aligned buffer "
                "(padding not removed)"
            )
        ttype = str(record["tensor_type"] or "").lower()
        if ttype in WIDENED_TO_INT8 and buffer.dtype == np.int8:
            faithful = False
            caveats.append(f"{record['tensor_type']} data returned as int8")
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


def _distribution_versions() -> dict[str, str]:
    try:
        from importlib.metadata import version  # Python 3.8+
    except ImportError:  # pragma: no cover
        return {}
    found = {}
    for dist in DISTRIBUTIONS:
        try:
            found[dist] = str(version(dist))
        except Exception:  # not installed as a distribution (an image's copy, a fake)
            continue
    return found


ADAPTER = HobotAdapter
