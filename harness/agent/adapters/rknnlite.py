"""``rknnlite``: Rockchip's rknn-toolkit-lite2 (``from rknnlite.api import RKNNLite``) on the board.

Numerical results only. ``RKNNLite.inference`` returns what ``rknn_outputs_get`` converts (float
arrays, NCHW for 4-D outputs): Python never sees the native NC1HWC2 bytes, and the input buffers
cannot be read back. So this adapter returns no input tensors, and each output says so in its
attributes (``numeric_only``, ``native_bytes: false``); layout checks need ``rknn_native``.

RKNNLite reports failures as return codes, not exceptions (``load_rknn``/``init_runtime``: 0 or
-1, ``inference``: a list or None, ``get_sdk_version``: a string or None); each one becomes an
AdapterError with its stage. Exceptions it raises anyway are wrapped the same way.

Options (``adapter_options``):
  ``core_mask``     ``auto``/``0``/``1``/``2``/``0_1``/``0_1_2``/``all`` (RKNNLite.NPU_CORE_*);
                    RK3588/RK3576 only, refused elsewhere when ``soc`` says so
  ``soc``           target name (``rk3588`` ...), for the core_mask guard
  ``target``, ``device_id``, ``async_mode``   passed to ``init_runtime``
  ``data_format``   for non-pass-through 4-D inputs (default ``nchw``: jobs carry ONNX order)
  ``output_names``  names of the outputs in model order (RKNNLite does not report them)
  ``verbose``       RKNNLite(verbose=...)

Board-side code: Python >= 3.8, standard library and numpy only.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

# Relative: the agent loads this as adapters.<name>, the harness as
# harness.agent.adapters.<name>; either way the base is the one beside it.
from .base import Adapter, AdapterError, InputTensor, RunOutput, TensorOut

# Option value -> RKNNLite attribute, and the value rknn_api.h gives it (for a toolkit that lacks
# the attribute).
CORE_MASKS = {
    "auto": ("NPU_CORE_AUTO", 0),
    "0": ("NPU_CORE_0", 1),
    "1": ("NPU_CORE_1", 2),
    "2": ("NPU_CORE_2", 4),
    "0_1": ("NPU_CORE_0_1", 3),
    "0_1_2": ("NPU_CORE_0_1_2", 7),
    "all": ("NPU_CORE_ALL", 0xFFFF),
}
MULTI_CORE_SOCS = ("rk3588", "rk3576")
DATA_TYPES = ("int8", "uint8", "int16", "float16", "float32")

NUMERIC_NOTE = (
    "RKNNLite.inference returns converted outputs (rknn_outputs_get), not the native buffer; "
    "the input buffers cannot be read back"
)


def _error(kind: str, stage: str, message: str, code: int | None = None) -> AdapterError:
    return AdapterError(kind, stage, message, code)


def load_rknnlite_class() -> Any:
    """``rknnlite.api.RKNNLite``, or an UnsupportedError that says why it is not there."""
    try:
        module = importlib.import_module("rknnlite.api")
    except ImportError as exc:
        # This file is itself named rknnlite: with the adapters folder on sys.path (instead of
        # its parent) `import rknnlite` finds this module, not the toolkit.
        found = importlib.import_module("rknnlite") if "not a package" in str(exc) else None
        where = f" (the name resolved to {getattr(found, '__file__', '?')})" if found else ""
        raise _error(
            "UnsupportedError",
            "init",
            f"rknn-toolkit-lite2 is not importable here: {exc}{where}",
        ) from exc
    cls = getattr(module, "RKNNLite", None)
    if cls is None:
        raise _error("UnsupportedError", "init", "rknnlite.api has no RKNNLite")
    return cls


@dataclass
class LiteModel:
    """One RKNNLite instance: the toolkit holds one model per object."""

    path: str
    rknn: Any
    sdk_version: str | None
    released: bool = False


class RknnLiteAdapter(Adapter):
    """RKNNLite: load_rknn, init_runtime, inference, release; numerical results only."""

    name = "rknnlite"

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__(options)
        self._cls: Any = None
        self._versions: dict[str, str] = {}

    def rknnlite(self) -> Any:
        if self._cls is None:
            self._cls = load_rknnlite_class()
            self._versions["rknn_toolkit_lite2"] = _package_version("rknn-toolkit-lite2")
        return self._cls

    def versions(self) -> dict[str, str]:
        self.rknnlite()
        return {k: v for k, v in self._versions.items() if v}

    # -- load / release -------------------------------------------------------------------

    def _core_mask(self, cls: Any) -> dict[str, Any]:
        value = self.options.get("core_mask")
        if value is None:
            return {}
        if isinstance(value, int):
            mask = value
        else:
            key = str(value).lower()
            for prefix in ("rknn_npu_core_", "npu_core_"):
                if key.startswith(prefix):
                    key = key[len(prefix) :]
            if key not in CORE_MASKS:
                known = ", ".join(sorted(CORE_MASKS))
                raise _error("LayoutError", "init", f"unknown core_mask {value!r} ({known})")
            attr, default = CORE_MASKS[key]
            mask = int(getattr(cls, attr, default))
        soc = str(self.options.get("soc") or "").lower()
        if soc and soc not in MULTI_CORE_SOCS and mask != 0:
            raise _error(
                "UnsupportedError", "init", f"core_mask is only for RK3588/RK3576, not {soc}"
            )
        return {"core_mask": mask}

    def load(self, model_path: str) -> LiteModel:
        cls = self.rknnlite()
        runtime_args: dict[str, Any] = {
            k: self.options[k] for k in ("target", "device_id", "async_mode") if k in self.options
        }
        runtime_args.update(self._core_mask(cls))
        try:
            rknn = cls(verbose=bool(self.options.get("verbose", False)))
        except Exception as exc:
            raise _error("DeviceError", "init", f"RKNNLite(): {_describe(exc)}") from exc
        ret = _call(rknn.load_rknn, "load", "RKNNLite.load_rknn", model_path)
        if ret != 0:
            _release_quietly(rknn)
            raise _error(
                "DeviceError", "load", f"RKNNLite.load_rknn({model_path!r}) returned {ret}", ret
            )
        ret = _call(rknn.init_runtime, "init", "RKNNLite.init_runtime", **runtime_args)
        if ret != 0:
            _release_quietly(rknn)
            raise _error(
                "DeviceError", "init", f"RKNNLite.init_runtime({runtime_args}) returned {ret}", ret
            )
        sdk = _call(rknn.get_sdk_version, "init", "RKNNLite.get_sdk_version")
        if sdk is not None:
            self._versions["sdk_version"] = str(sdk)
        return LiteModel(path=model_path, rknn=rknn, sdk_version=None if sdk is None else str(sdk))

    def release(self, model: Any) -> None:
        if not isinstance(model, LiteModel) or model.released:
            return
        model.released = True
        _call(model.rknn.release, "release", "RKNNLite.release")

    # -- run ------------------------------------------------------------------------------

    def run(self, model: Any, inputs: list[InputTensor], outputs: list[str] | None) -> RunOutput:
        if not isinstance(model, LiteModel) or model.released:
            raise _error("DeviceError", "run", "model handle is not a loaded rknnlite model")
        start = time.perf_counter()
        arrays = [self._array(inp) for inp in inputs]
        kwargs: dict[str, Any] = {
            "inputs": arrays,
            "inputs_pass_through": [1 if inp.pass_through else 0 for inp in inputs],
        }
        dtypes = [str(np.dtype(inp.dtype)) for inp in inputs]
        for dt in dtypes:
            if dt not in DATA_TYPES:
                raise _error(
                    "LayoutError", "run", f"RKNNLite takes {', '.join(DATA_TYPES)} inputs, not {dt}"
                )
        if dtypes:
            # One type for all inputs is the documented form; mixed types go as a list.
            kwargs["data_type"] = dtypes[0] if len(set(dtypes)) == 1 else dtypes
        data_format = self._data_format(inputs)
        if data_format is not None:
            kwargs["data_format"] = data_format
        copy_s = time.perf_counter() - start

        start = time.perf_counter()
        results = _call(model.rknn.inference, "run", "RKNNLite.inference", **kwargs)
        run_s = time.perf_counter() - start
        if results is None:
            raise _error(
                "DeviceError", "run", "RKNNLite.inference returned None (the toolkit logged why)"
            )

        start = time.perf_counter()
        results = list(results)
        names = self._output_names(len(results), outputs)
        wanted: list[int] = list(range(len(results)))
        if outputs is not None:
            missing = [w for w in outputs if w not in names]
            if missing:
                raise _error(
                    "LayoutError",
                    "fetch",
                    f"outputs {missing} unknown: RKNNLite does not name its outputs; "
                    f"set adapter_options.output_names (have {names})",
                )
            wanted = [names.index(w) for w in outputs]
        tensors = [self._tensor(names[i], results[i], model) for i in wanted]
        copy_s += time.perf_counter() - start
        return RunOutput(inputs=[], outputs=tensors, timings={"run_s": run_s, "copy_s": copy_s})

    def _array(self, inp: InputTensor) -> np.ndarray:
        if inp.pass_through:
            # Native bytes, packed by the host codec; the toolkit hands them on unconverted.
            data = np.ascontiguousarray(inp.data, dtype=np.uint8).reshape(-1)
            itemsize = np.dtype(inp.dtype).itemsize
            if data.nbytes % itemsize:
                raise _error(
                    "LayoutError",
                    "run",
                    f"input {inp.name!r}: {data.nbytes} bytes are not a whole number of "
                    f"{inp.dtype}",
                )
            return data.view(np.dtype(inp.dtype))
        return np.ascontiguousarray(inp.logical())

    def _data_format(self, inputs: list[InputTensor]) -> str | None:
        if "data_format" in self.options:
            value = self.options["data_format"]
            return None if value is None else str(value)
        # Jobs carry logical tensors in ONNX order; RKNNLite assumes NHWC for 4-D unless told.
        if any(len(inp.shape) == 4 and not inp.pass_through for inp in inputs):
            return "nchw"
        return None

    def _output_names(self, count: int, wanted: list[str] | None) -> list[str]:
        given = self.options.get("output_names")
        if given:
            names = [str(n) for n in given]
            if len(names) != count:
                raise _error(
                    "LayoutError",
                    "fetch",
                    f"output_names has {len(names)} names, the model returned {count} outputs",
                )
            return names
        if wanted is not None and len(wanted) == count:
            # The job lists every output, in model order: take its names.
            return [str(w) for w in wanted]
        return [f"output{i}" for i in range(count)]

    def _tensor(self, name: str, value: Any, model: LiteModel) -> TensorOut:
        array = np.ascontiguousarray(np.asarray(value))
        layout = "NCHW" if array.ndim == 4 else "UNDEFINED"
        return TensorOut(
            name=name,
            data=array.reshape(-1).view(np.uint8).copy(),
            layout=layout,
            dtype=str(array.dtype),
            shape=[int(d) for d in array.shape],
            attributes={
                "source": "RKNNLite.inference",
                "numeric_only": True,
                "native_bytes": False,
                "inputs_read_back": False,
                "layout_assumed": True,
                "dtype": str(array.dtype),
                "shape": [int(d) for d in array.shape],
                "sdk_version": model.sdk_version,
                "note": NUMERIC_NOTE,
            },
        )


def _call(func: Any, stage: str, what: str, *args: Any, **kwargs: Any) -> Any:
    """Call into the toolkit; an exception it raises becomes a DeviceError of this stage."""
    try:
        return func(*args, **kwargs)
    except AdapterError:
        raise
    except Exception as exc:
        raise _error("DeviceError", stage, f"{what} raised {_describe(exc)}") from exc


def _release_quietly(rknn: Any) -> None:
    # The load failure is the error worth reporting, not a failing release after it.
    with contextlib.suppress(Exception):
        rknn.release()


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _package_version(dist: str) -> str:
    try:
        from importlib.metadata import version  # Python 3.8+
    except ImportError:  # pragma: no cover
        return ""
    try:
        return str(version(dist))
    except Exception:  # not installed as a distribution (a copied module, a fake)
        return ""


ADAPTER = RknnLiteAdapter
