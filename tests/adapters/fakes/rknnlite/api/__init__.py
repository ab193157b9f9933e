"""Fake ``rknnlite.api``: ``RKNNLite`` with the surface and behaviour of rknn-toolkit-lite2 2.5.0.

What it copies from the real 2.5.0 package (its ``rknn_lite.py`` and the messages compiled into
``rknn_runtime``), so a test against it fails where the real toolkit would:

- ``load_rknn(path, key_path=None)``, ``init_runtime(target, device_id, async_mode, core_mask)``
  return 0 or -1 and log why; ``get_sdk_version()`` is None before ``init_runtime``, else the
  multi-line banner (a line of ``=``, ``RKNN VERSION:``, ``  API: ...``, ``  DRV: ...``, ``=``).
- ``inference(inputs, data_type, data_format, inputs_pass_through, get_frame_id,
  reuse_outputs=False)`` never raises: every failure in setting inputs, running or fetching is
  logged ("E Catch exception when setting inputs." ...) and it returns None.
- inputs: a list of ``np.ndarray``; ``data_type`` one name or one per input, among int8, uint8,
  int16, float16, float32, and every array's dtype must equal it; ``data_format`` one or one per
  input, ``nchw``/``nhwc``; a pass-through input must have the rank of the model's input
  (``INPUT_ATTR.n_dims``, 4 here even where the native input is 5-D NC1HWC2: measured with the
  real 2.5.0 on an emulated RK3588, "The input[0] need 4dims input, but 5dims input buffer
  feed.", and likewise for 1-D buffers) and exactly its native ``size`` bytes
  in its element type (rknn_inputs_set's check); rows of an NHWC native input are ``W`` wide here
  (the normal API lays them out to ``w_stride`` itself).
- core masks: ``NPU_CORE_*`` as in 2.5.0; anything but AUTO only on RK3588/RK3576; ``NPU_CORE_ALL``
  becomes ``NPU_CORE_0_1_2`` (7); on RK3576 ``NPU_CORE_0_1_2`` becomes ``NPU_CORE_0_1`` and
  ``NPU_CORE_2`` becomes ``NPU_CORE_0``, with the warnings 2.5.0 prints. Where 2.5.0's own
  return value is not known from the package (a mask on a single-core SoC), this fake refuses
  with -1.

The "model" is a text file, one of:
  ``FAKE-RKNN shape=1,3,4,5 zp=-14 scale=0.5 [w_stride=16] [c2=16] [dtype=int8]``
      an int8 (or float16) identity on a logical NCHW input; the native input is NHWC when C is
      1, 3 or 4 (``w_stride`` default: W rounded up to 16, as RK3588 int8 reports), else
      NC1HWC2 with ``c2``; outputs are float32 NCHW, ``(q - zp) * scale``.
  ``FAKE-RKNN-ATTRS {json}``
      the runtime's ``rknn_query`` answers of a real model (``INPUT_ATTR``,
      ``NATIVE_INPUT_ATTR``, ``OUTPUT_ATTR`` as in the observations file): pass-through inputs
      are checked against ``NATIVE_INPUT_ATTR`` and the one output is float32 in ``OUTPUT_ATTR``
      dims with values ``pattern(input bytes)`` (see ``pattern_output``).

Test controls: ``SOC`` (what /proc/device-tree/compatible would say; default rk3588), ``FAULTS``
(names: load, init, sdk, inference, raise, release) and ``CALLS`` (``(method, arguments)`` in call
order); ``LOG`` holds every line it logged.
"""

from __future__ import annotations

import json
import os
import traceback
from typing import Any

import numpy as np

SOC = "rk3588"
FAULTS: set[str] = set()
CALLS: list[tuple[str, dict[str, Any]]] = []
LOG: list[str] = []

BANNER_RULE = "=" * 46
DATA_TYPES = ("int8", "uint8", "int16", "float16", "float32")
RKNN_TYPES = {0: "float32", 1: "float16", 2: "int8", 3: "uint8", 4: "int16"}
MULTI_NPU_SOC = ("RK3576", "RK3588")


def _log(line: str) -> None:
    LOG.append(line)
    print(line)


def pattern_output(raw: bytes, attr: dict[str, Any]) -> np.ndarray:
    """The output a model given by attributes computes: byte i of the output is
    ``(in[i % len(in)] + 7 i + 1) & 0xff`` (as the C fake's), read as int8 and dequantized with
    the output's zp/scale, in ``OUTPUT_ATTR`` dims."""
    src = np.frombuffer(raw, dtype=np.uint8)
    n = int(np.prod(attr["dims"]))
    i = np.arange(n, dtype=np.int64)
    q = ((src[i % src.size].astype(np.int64) + 7 * i + 1) & 0xFF).astype(np.uint8).view(np.int8)
    out = (q.astype(np.float32) - float(attr.get("zp", 0))) * float(attr.get("scale", 1.0))
    return out.reshape([int(d) for d in attr["dims"]]).astype(np.float32)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


class _Model:
    """The parsed model file: the native input attribute and how outputs are computed."""

    def __init__(self, text: str) -> None:
        self.attrs: dict[str, Any] | None = None
        if text.startswith("FAKE-RKNN-ATTRS"):
            self.attrs = json.loads(text[len("FAKE-RKNN-ATTRS") :])
            self.native = dict(self.attrs["NATIVE_INPUT_ATTR"])
            self.native_type = RKNN_TYPES[int(self.native["type"])]
            self.input_rank = int(self.attrs["INPUT_ATTR"]["n_dims"])
            return
        self.input_rank = 4  # the logical NCHW input
        shape, zp, scale, w_stride, c2, dtype = (1, 3, 4, 5), -14, 0.5, None, 16, "int8"
        for token in text.split()[1:]:
            key, _, value = token.partition("=")
            if key == "shape":
                shape = tuple(int(v) for v in value.split(","))
            elif key == "zp":
                zp = int(value)
            elif key == "scale":
                scale = float(value)
            elif key == "w_stride":
                w_stride = int(value)
            elif key == "c2":
                c2 = int(value)
            elif key == "dtype":
                dtype = value
        n, c, h, w = shape
        self.shape, self.zp, self.scale, self.native_type = shape, zp, scale, dtype
        item = np.dtype(dtype).itemsize
        if c in (1, 3, 4):
            ws = w_stride if w_stride is not None else _round_up(w, 16)
            self.native = {
                "fmt": 1,
                "n_dims": 4,
                "dims": [n, h, w, c],
                "size": n * h * w * c * item,
                "w_stride": ws,
                "size_with_stride": n * h * ws * c * item,
            }
        else:
            dims = [n, -(-c // c2), h, w, c2]
            size = int(np.prod(dims)) * item
            self.native = {
                "fmt": 2,
                "n_dims": 5,
                "dims": dims,
                "size": size,
                "w_stride": w,
                "size_with_stride": size,
            }

    def compute(self, x: np.ndarray, pass_through: bool) -> np.ndarray:
        """The one output, as rknn_outputs_get(want_float) hands it: float32 NCHW."""
        if self.attrs is not None:
            return pattern_output(x.tobytes(), self.attrs["OUTPUT_ATTR"])
        n, c, h, w = self.shape
        if pass_through and self.native["fmt"] == 1:
            q = x.reshape(n, h, w, c).transpose(0, 3, 1, 2)
        elif pass_through:
            # (N, C1, H, W, C2) -> (N, C1 * C2, H, W), channel padding dropped
            q = x.reshape(self.native["dims"]).transpose(0, 1, 4, 2, 3).reshape(n, -1, h, w)
            q = q[:, :c]
        else:
            return np.ascontiguousarray(x.transpose(0, 3, 1, 2)).astype(np.float32)
        return ((q.astype(np.float32) - self.zp) * self.scale).astype(np.float32)


class RKNNLite:
    NPU_CORE_AUTO = 0
    NPU_CORE_0 = 1
    NPU_CORE_1 = 2
    NPU_CORE_2 = 4
    NPU_CORE_0_1 = 3
    NPU_CORE_0_1_2 = 7
    NPU_CORE_ALL = 0xFFFF

    def __init__(self, verbose: bool = False, verbose_file: str | None = None) -> None:
        self.verbose = verbose
        self.rknn_data: bytes | None = None
        self._model: _Model | None = None
        self._ready = False
        self._staging: list[np.ndarray] = []

    def load_rknn(self, path: str, key_path: str | None = None) -> int:
        CALLS.append(("load_rknn", {"path": path, "key_path": key_path}))
        if "load" in FAULTS:
            _log("E load_rknn: fault injected")
            return -1
        if not os.path.exists(path):
            _log(f"E Invalid RKNN model path: {path}")
            return -1
        if key_path is not None and not os.path.exists(key_path):
            _log(f"E Invalid key envelope path: {key_path}")
            return -1
        with open(path, "rb") as handle:
            self.rknn_data = handle.read()
        return 0

    def init_runtime(
        self,
        target: str | None = None,
        device_id: str | None = None,
        async_mode: bool = False,
        core_mask: int = NPU_CORE_AUTO,
    ) -> int:
        call: dict[str, Any] = {
            "target": target,
            "device_id": device_id,
            "async_mode": async_mode,
            "core_mask": core_mask,
        }
        CALLS.append(("init_runtime", call))
        if self.rknn_data is None:
            _log("E Model is not loaded yet, this interface should be called after load_rknn!")
            return -1
        text = self.rknn_data.decode("utf-8", "replace")
        if "init" in FAULTS or not text.startswith("FAKE-RKNN"):
            _log("E Catch exception when init runtime!")
            return -1
        self._model = _Model(text)
        mask = self._set_core_mask(core_mask)
        call["effective_core_mask"] = mask
        if mask is None:
            return -1
        self._ready = True
        return 0

    def _set_core_mask(self, core_mask: int) -> int | None:
        soc = SOC.upper()
        if core_mask not in (0, 1, 2, 4, 3, 7, 0xFFFF):
            _log(f"E The core mode {core_mask} is not supported currently.")
            return None
        if core_mask == self.NPU_CORE_AUTO:
            return core_mask
        if soc not in MULTI_NPU_SOC:
            _log(
                f"E The core_mask is only supported by {list(MULTI_NPU_SOC)}. Please do not set "
                "this parameter on other platforms."
            )
            return None
        if core_mask == self.NPU_CORE_ALL:
            core_mask = self.NPU_CORE_0_1_2
        if soc == "RK3576" and core_mask == self.NPU_CORE_0_1_2:
            _log(
                'W The RK3576 platform has only two NPU cores. "NPU_CORE_0_1_2" is not supported '
                'and will be automatically replaced with "NPU_CORE_0_1".'
            )
            core_mask = self.NPU_CORE_0_1
        if soc == "RK3576" and core_mask == self.NPU_CORE_2:
            _log(
                'W The RK3576 platform has only two NPU cores. "NPU_CORE_2" is not supported '
                'and will be automatically replaced with "NPU_CORE_0".'
            )
            core_mask = self.NPU_CORE_0
        return core_mask

    def get_sdk_version(self) -> str | None:
        if not self._ready:
            _log("E Runtime environment is not inited, please call init_runtime to init it first!")
            return None
        if "sdk" in FAULTS:
            _log("E Catch exception when get sdk version")
            return None
        return "\n".join(
            [
                BANNER_RULE,
                "RKNN VERSION:",
                "  API: 2.5.0 (fake@2025-09-26)",
                "  DRV: 0.9.8",
                BANNER_RULE,
            ]
        )

    def inference(
        self,
        inputs: Any,
        data_type: Any = None,
        data_format: Any = None,
        inputs_pass_through: list[int] | None = None,
        get_frame_id: bool = False,
        reuse_outputs: bool = False,
    ) -> list[np.ndarray] | None:
        CALLS.append(
            (
                "inference",
                {
                    "inputs": inputs,
                    "data_type": data_type,
                    "data_format": data_format,
                    "inputs_pass_through": inputs_pass_through,
                    "reuse_outputs": reuse_outputs,
                },
            )
        )
        if not self._ready or self._model is None:
            _log("E Runtime environment is not inited, please call init_runtime to init it first!")
            return None
        try:
            arrays = self._set_inputs(inputs, data_type, data_format, inputs_pass_through)
        except Exception:
            _log("E Catch exception when setting inputs.")
            _log("E " + traceback.format_exc())
            return None
        try:
            if "inference" in FAULTS:
                raise RuntimeError("RKNN run failed. error code: -1")
            x, through = arrays[0]
            out = self._model.compute(x, through)
        except Exception:
            _log("E Catch exception when running RKNN model.")
            _log("E " + traceback.format_exc())
            return None
        if not reuse_outputs:
            return [out]
        if not self._staging or self._staging[0].shape != out.shape:
            self._staging = [np.empty_like(out)]
        np.copyto(self._staging[0], out)
        return list(self._staging)

    def _set_inputs(
        self, inputs: Any, data_type: Any, data_format: Any, pass_through: list[int] | None
    ) -> list[tuple[np.ndarray, bool]]:
        """RKNNRuntime.set_inputs: the checks in the order 2.5.0 logs them; raises on refusal."""
        assert self._model is not None
        if "raise" in FAULTS:
            raise RuntimeError("fault injected: the runtime raised")
        if not isinstance(inputs, list):
            raise TypeError(
                "Inputs should be placed in a list, like [img1, img2], both the img1 and img2 "
                "are ndarray."
            )
        count = len(inputs)
        for i, x in enumerate(inputs):
            if not isinstance(x, np.ndarray):
                raise TypeError(f"E Type of inputs[{i}] is not np.ndarray!")
        types = self._per_input(data_type, count, "data_type")
        formats = self._per_input(data_format, count, "data_format")
        flags = [0] * count if pass_through is None else list(pass_through)
        if len(flags) != count:
            raise ValueError("E The lengths of inputs_pass_through and inputs are not equal.")
        if count != 1:
            raise ValueError(f"E Inputs are invalid. (the model has 1 input, {count} given)")
        out = []
        for i, x in enumerate(inputs):
            want = types[i] if types[i] is not None else str(x.dtype)
            if want not in DATA_TYPES:
                raise ValueError(f"E Unsupport data type: {want}")
            if str(x.dtype) != want:
                raise ValueError(
                    f"E inputs[{i}].dtype: {x.dtype} is not same as data_type"
                    + (f"[{i}]" if isinstance(data_type, list) else "")
                )
            fmt = formats[i]
            if fmt is not None and fmt not in ("nchw", "nhwc"):
                raise ValueError(f"Unsupport data format: {fmt}")
            if flags[i]:
                out.append((self._pass_through(i, x), True))
            else:
                out.append((self._logical(i, x, fmt), False))
        return out

    @staticmethod
    def _per_input(value: Any, count: int, what: str) -> list[Any]:
        if isinstance(value, (list, tuple)):
            if len(value) != count:
                raise ValueError(f"E The lengths of {what} and inputs are not equal.")
            return list(value)
        return [value] * count

    def _pass_through(self, i: int, x: np.ndarray) -> np.ndarray:
        assert self._model is not None
        native = self._model.native
        if x.ndim != self._model.input_rank:
            raise ValueError(
                f"The input[{i}] need {self._model.input_rank}dims input, but {x.ndim}dims input "
                "buffer feed."
            )
        if str(x.dtype) != self._model.native_type or x.nbytes != int(native["size"]):
            # rknn_inputs_set refuses it; RKNNLite raises with the runtime's code.
            raise RuntimeError(
                f"Set inputs failed. error code: -5 (input[{i}]: {x.dtype}, {x.nbytes} bytes; "
                f"the model takes {self._model.native_type}, {native['size']} bytes)"
            )
        return np.ascontiguousarray(x)

    def _logical(self, i: int, x: np.ndarray, fmt: str | None) -> np.ndarray:
        assert self._model is not None
        if self._model.attrs is not None:
            raise RuntimeError("this fake model only takes pass-through inputs")
        n, c, h, w = self._model.shape
        if x.ndim == 4 and fmt == "nchw":
            x = x.transpose(0, 2, 3, 1)
        if x.shape != (n, h, w, c):
            raise RuntimeError(f"Set inputs failed. error code: -5 (input[{i}] shape {x.shape})")
        return np.ascontiguousarray(x)

    def release(self) -> None:
        CALLS.append(("release", {}))
        self._ready = False
        if "release" in FAULTS:
            raise RuntimeError("fault injected: release failed")
