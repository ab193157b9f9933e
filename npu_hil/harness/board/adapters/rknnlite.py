"""``rknnlite``: Rockchip's rknn-toolkit-lite2 (``RKNNLite``) on the board, numerical results only.
The 2.5.0 API facts this follows (with the artefact each comes from), how pass-through inputs are
shaped and the options: ``docs/runtime/agent.md`` (Adapters).
"""

from __future__ import annotations

import contextlib
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
    pick_outputs,
    timed,
    vendor_call,
)

# The option's values, RKNNLite's NPU_CORE_<KEY> (whose values rknn_api.h gives, for a toolkit
# that lacks the attribute), the SoC guard and RKNNLite 2.5.0's RK3576 remap are rknn_native's.
from .rknn_native import CORE_MASKS, RK3576_REMAP, core_mask

DATA_TYPES = ("int8", "uint8", "int16", "float16", "float32")
# C2 candidates of a 5-D NC1HWC2 native input, by element size, most common first (observed:
# int8 16 on RK3588/RK3562/RV1103/RV1106, 8 on RK3566/68 and RV1103B/06B; float16 8 or 4).
C2_CANDIDATES = {1: (16, 8, 4, 32), 2: (8, 4, 16)}

NUMERIC_NOTE = (
    "RKNNLite.inference returns converted outputs (rknn_outputs_get), not the native buffer; "
    "the input buffers cannot be read back"
)


@dataclass
class LiteModel:
    """One RKNNLite instance: the toolkit holds one model per object."""

    path: str
    rknn: Any
    sdk_version: str | None
    core_mask: int | None = None  # what init_runtime was given
    core_mask_effective: int | None = None  # what RKNNLite hands the runtime after its remaps
    released: bool = False


class RknnLiteAdapter(Adapter):
    """RKNNLite: load_rknn, init_runtime, inference, release; numerical results only."""

    name = "rknnlite"
    log_level_env = "RKNN_LOG_LEVEL"  # librknnrt reads it at rknn_init: 0 (none) .. 5 (most)
    canary_reason = (
        "RKNNLite.inference() hands back numpy arrays it allocates during the call (its "
        "Python API has no preallocated outputs; reuse_outputs=True only overwrites the "
        "previous call's arrays, and the first call of a model allocates), so no buffer "
        "of the runtime's exists before the run to fill; use rknn_native (zero-copy) "
        "for the canary check."
    )

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__(options)
        self._cls: Any = None
        self._versions: dict[str, str] = {}

    def rknnlite(self) -> Any:
        """``rknnlite.api.RKNNLite``, or an UnsupportedError that says why it is not there."""
        if self._cls is not None:
            return self._cls
        try:
            module = importlib.import_module("rknnlite.api")
        except ImportError as exc:
            # This file is itself named rknnlite: with the adapters folder on sys.path (instead
            # of its parent) `import rknnlite` finds this module, not the toolkit.
            found = importlib.import_module("rknnlite") if "not a package" in str(exc) else None
            where = f" (the name resolved to {getattr(found, '__file__', '?')})" if found else ""
            raise AdapterError(
                "UnsupportedError",
                "init",
                f"rknn-toolkit-lite2 is not importable here: {exc}{where}",
            ) from exc
        self._cls = getattr(module, "RKNNLite", None)
        if self._cls is None:
            raise AdapterError("UnsupportedError", "init", "rknnlite.api has no RKNNLite")
        self._versions["rknn_toolkit_lite2"] = package_version("rknn-toolkit-lite2")
        return self._cls

    def versions(self) -> dict[str, str]:
        self.rknnlite()
        return {k: v for k, v in self._versions.items() if v}

    # -- load / release -------------------------------------------------------------------

    def load(self, model_path: str) -> LiteModel:
        cls = self.rknnlite()
        runtime_args: dict[str, Any] = {
            k: self.options[k] for k in ("target", "device_id", "async_mode") if k in self.options
        }
        # The core_mask for init_runtime (RKNNLite's own constant), and what RKNNLite 2.5.0
        # passes on for it: ALL becomes 0_1_2; on RK3576 the masks naming core 2 become their
        # two-core counterparts.
        mask = effective = self.options.get("core_mask")
        if mask is not None:
            soc = str(self.options.get("soc") or "").lower()
            mask = core_mask(mask, soc, cls)
            runtime_args["core_mask"] = mask
            effective = CORE_MASKS["0_1_2"] if mask == CORE_MASKS["all"] else mask
            if soc == "rk3576":
                effective = RK3576_REMAP.get(effective, effective)
        rknn = vendor_call(cls, "init", "RKNNLite()", verbose=bool(self.options.get("verbose")))
        load_args: dict[str, Any] = {}
        if self.options.get("key_path"):
            # Only when asked: toolkits before 2.5.0 have no key_path parameter.
            load_args["key_path"] = str(self.options["key_path"])
        steps = (
            ("load", f"load_rknn({model_path!r})", lambda: rknn.load_rknn(model_path, **load_args)),
            ("init", f"init_runtime({runtime_args})", lambda: rknn.init_runtime(**runtime_args)),
        )
        for stage, call, step in steps:
            ret = vendor_call(step, stage, f"RKNNLite.{call}")
            if ret != 0:
                # The failure is the error worth reporting, not a failing release after it.
                with contextlib.suppress(Exception):
                    rknn.release()
                raise AdapterError("DeviceError", stage, f"RKNNLite.{call} returned {ret}", ret)
        sdk = vendor_call(rknn.get_sdk_version, "init", "RKNNLite.get_sdk_version")
        if sdk is not None:
            self._versions["sdk_version"] = str(sdk)
            self._versions.update(parse_sdk_banner(str(sdk)))
        return LiteModel(
            path=model_path,
            rknn=rknn,
            sdk_version=None if sdk is None else str(sdk),
            core_mask=mask,
            core_mask_effective=effective,
        )

    def release(self, model: Any) -> None:
        if isinstance(model, LiteModel) and not model.released:
            model.released = True
            vendor_call(model.rknn.release, "release", "RKNNLite.release")

    # -- run ------------------------------------------------------------------------------

    def run(self, model: Any, inputs: list[InputTensor], outputs: list[str] | None) -> RunOutput:
        self.loaded(model, LiteModel)
        timings: dict[str, float] = {}
        with timed(timings, "copy_s"):
            kwargs: dict[str, Any] = {
                "inputs": [
                    self._pass_through_array(inp)
                    if inp.pass_through
                    else np.ascontiguousarray(inp.logical())
                    for inp in inputs
                ],
                "inputs_pass_through": [1 if inp.pass_through else 0 for inp in inputs],
            }
            dtypes = [str(np.dtype(inp.dtype)) for inp in inputs]
            for dt in dtypes:
                if dt not in DATA_TYPES:
                    raise AdapterError(
                        "LayoutError",
                        "run",
                        f"RKNNLite takes {', '.join(DATA_TYPES)} inputs, not {dt}",
                    )
            if dtypes:
                # One type for all inputs is the documented form; mixed types go as a list.
                kwargs["data_type"] = dtypes[0] if len(set(dtypes)) == 1 else dtypes
            data_format = self._data_format(inputs)
            if data_format is not None:
                kwargs["data_format"] = data_format
            if "reuse_outputs" in self.options:
                kwargs["reuse_outputs"] = bool(self.options["reuse_outputs"])

        with timed(timings, "run_s"):
            results = vendor_call(model.rknn.inference, "run", "RKNNLite.inference", **kwargs)
        if results is None:
            raise AdapterError(
                "DeviceError", "run", "RKNNLite.inference returned None (the toolkit logged why)"
            )

        with timed(timings, "copy_s"):
            results = list(results)
            names = self._output_names(len(results), outputs)
            hint = ": RKNNLite does not name its outputs; set adapter_options.output_names"
            wanted = pick_outputs(names, outputs, hint)
            tensors = [self._tensor(names[i], results[i], model) for i in wanted]
        return RunOutput(inputs=[], outputs=tensors, timings=timings)

    def _pass_through_array(self, inp: InputTensor) -> np.ndarray:
        """Native bytes, packed by the host codec, as RKNNLite takes them: the native rank and
        ``attr.size`` bytes (see the module docstring)."""
        data = np.ascontiguousarray(inp.data, dtype=np.uint8).reshape(-1)
        dtype = np.dtype(inp.dtype)
        where = f"input {inp.name!r} ({inp.layout}, logical {list(inp.shape)} {inp.dtype})"
        if data.nbytes % dtype.itemsize:
            raise AdapterError(
                "LayoutError",
                "run",
                f"{where}: {data.nbytes} bytes are not a whole number of {inp.dtype}",
            )
        values = data.view(dtype)
        layout = str(inp.layout).upper()
        given = (self.options.get("native_dims") or {}).get(inp.name)
        if given is not None:
            dims = [int(d) for d in given]
            if int(np.prod(dims)) != values.size:
                raise AdapterError(
                    "LayoutError",
                    "run",
                    f"{where}: native_dims {dims} hold {int(np.prod(dims))} elements, the buffer "
                    f"{values.size}",
                )
            return values.reshape(_rank4(dims))
        if layout == "NHWC" and len(inp.shape) == 4:
            return self._nhwc(values, inp, where)
        if layout == "NC1HWC2" and len(inp.shape) == 4:
            return values.reshape(_rank4(self._nc1hwc2_dims(values.size, inp, where)))
        if values.size != int(np.prod(inp.shape)):
            raise AdapterError(
                "LayoutError",
                "run",
                f"{where}: {values.size} elements, the logical shape holds "
                f"{int(np.prod(inp.shape))}; RKNNLite needs the model input's rank",
            )
        return values.reshape([int(d) for d in inp.shape])

    def _nhwc(self, values: np.ndarray, inp: InputTensor, where: str) -> np.ndarray:
        n, c, h, w = (int(d) for d in inp.shape)  # jobs carry ONNX (NCHW) order
        rows = n * h * c
        if rows == 0 or values.size % rows or values.size // rows < w:
            raise AdapterError(
                "LayoutError",
                "run",
                f"{where}: {values.size} elements are not N*H rows of w_stride >= W={w} "
                f"pixels of C={c} (N={n}, H={h})",
            )
        w_stride = values.size // rows
        strided = values.reshape(n, h, w_stride, c)
        mode = str(self.options.get("pass_through_rows", "dense")).lower()
        if mode == "strided" or w_stride == w:
            return strided
        if mode != "dense":
            raise AdapterError(
                "LayoutError", "run", f"pass_through_rows must be dense or strided, not {mode!r}"
            )
        # rknn_inputs_set checks attr.size (rows of W) and pads rows to w_stride itself.
        return np.ascontiguousarray(strided[:, :, :w, :])

    def _nc1hwc2_dims(self, size: int, inp: InputTensor, where: str) -> list[int]:
        n, c, h, w = (int(d) for d in inp.shape)
        itemsize = np.dtype(inp.dtype).itemsize
        for c2 in C2_CANDIDATES.get(itemsize, (16, 8, 4)):
            c1 = -(-c // c2)
            if n * c1 * h * w * c2 == size:
                return [n, c1, h, w, c2]
        raise AdapterError(
            "LayoutError",
            "run",
            f"{where}: {size} elements fit no [N, C1, H, W, C2] with C2 in "
            f"{C2_CANDIDATES.get(itemsize)}; give adapter_options.native_dims",
        )

    def _data_format(self, inputs: list[InputTensor]) -> str | list[str] | None:
        if "data_format" in self.options:
            value = self.options["data_format"]
            return None if value is None else str(value)
        # Jobs carry logical tensors in ONNX order; RKNNLite assumes NHWC for 4-D unless told,
        # and would transpose a pass-through buffer told 'nchw': one format per input then.
        logical4 = [len(inp.shape) == 4 and not inp.pass_through for inp in inputs]
        if not any(logical4):
            return None
        if all(logical4):
            return "nchw"
        return ["nchw" if flag else "nhwc" for flag in logical4]

    def _output_names(self, count: int, wanted: list[str] | None) -> list[str]:
        given = self.options.get("output_names")
        if given:
            names = [str(n) for n in given]
            if len(names) != count:
                raise AdapterError(
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
                "core_mask": model.core_mask,
                "core_mask_effective": model.core_mask_effective,
                "note": NUMERIC_NOTE,
            },
        )


def _rank4(dims: list[int]) -> list[int]:
    """5-D NC1HWC2 dims as the 4-D view RKNNLite takes, ``[N, C1 * H, W, C2]`` (same bytes)."""
    if len(dims) == 5:
        n, c1, h, w, c2 = dims
        return [n, c1 * h, w, c2]
    return dims


def parse_sdk_banner(text: str) -> dict[str, str]:
    """``api_version`` and ``drv_version`` from the banner ``get_sdk_version`` returns (rules of
    ``=``, ``RKNN VERSION:``, ``API: ...``, ``DRV: ...``; several DRV lines are joined with
    ``; ``). A one-line answer of an older toolkit is taken as the API version."""
    found: dict[str, list[str]] = {"API": [], "DRV": []}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().upper() in found:
            found[key.strip().upper()].append(value.strip())
    if not any(found.values()) and text.strip() and "\n" not in text.strip():
        found["API"].append(text.strip())
    names = {"API": "api_version", "DRV": "drv_version"}
    return {names[key]: "; ".join(values) for key, values in found.items() if values}


ADAPTER = RknnLiteAdapter
