"""Fake ``rknnlite.api``: ``RKNNLite`` with the toolkit's surface and return-code conventions.

Like rknn-toolkit-lite2 2.x: ``load_rknn``/``init_runtime`` return 0 or -1 and print the reason,
``inference`` returns a list of float32 arrays (NCHW for 4-D outputs) or None, ``get_sdk_version``
a string or None (before ``init_runtime``). Nothing raises, except on the ``raise`` fault.

The "model" is a text file: ``FAKE-RKNN shape=1,3,4,5 zp=-14 scale=0.5``, an int8 identity:
a logical input comes back as float32; a pass-through input is the native NHWC int8 tensor and
comes back dequantized, ``(q - zp) * scale``, in NCHW.

Test controls: ``FAULTS`` (names: load, init, sdk, inference, raise, release) and ``CALLS``
(``(method, arguments)`` in call order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

FAULTS: set[str] = set()
CALLS: list[tuple[str, dict[str, Any]]] = []


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
        self._model: dict[str, Any] | None = None
        self._ready = False

    def load_rknn(self, path: str) -> int:
        CALLS.append(("load_rknn", {"path": path}))
        if "load" in FAULTS:
            print("E load_rknn: fault injected")
            return -1
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            print(f"E load_rknn: {exc}")
            return -1
        if not text.startswith("FAKE-RKNN"):
            print("E load_rknn: not an RKNN model")
            return -1
        model: dict[str, Any] = {"shape": (1, 3, 4, 5), "zp": -14, "scale": 0.5}
        for token in text.split()[1:]:
            key, _, value = token.partition("=")
            if key == "shape":
                model["shape"] = tuple(int(v) for v in value.split(","))
            elif key == "zp":
                model["zp"] = int(value)
            elif key == "scale":
                model["scale"] = float(value)
        self._model = model
        return 0

    def init_runtime(
        self,
        target: str | None = None,
        device_id: str | None = None,
        async_mode: bool = False,
        core_mask: int = NPU_CORE_AUTO,
    ) -> int:
        CALLS.append(
            (
                "init_runtime",
                {
                    "target": target,
                    "device_id": device_id,
                    "async_mode": async_mode,
                    "core_mask": core_mask,
                },
            )
        )
        if self._model is None:
            print("E init_runtime: model is not loaded")
            return -1
        if "init" in FAULTS or core_mask not in (0, 1, 2, 4, 3, 7, 0xFFFF):
            print("E init_runtime: failed")
            return -1
        self._ready = True
        return 0

    def get_sdk_version(self) -> str | None:
        if not self._ready or "sdk" in FAULTS:
            print("E get_sdk_version: runtime is not initialised")
            return None
        return "API: 2.3.0 (fake)\nDRV: rknnrt 2.3.0 (fake)"

    def inference(
        self,
        inputs: list[Any] | None = None,
        data_type: Any = None,
        data_format: Any = None,
        inputs_pass_through: list[int] | None = None,
        get_frame_id: bool = False,
    ) -> list[np.ndarray] | None:
        CALLS.append(
            (
                "inference",
                {
                    "inputs": inputs,
                    "data_type": data_type,
                    "data_format": data_format,
                    "inputs_pass_through": inputs_pass_through,
                },
            )
        )
        if "raise" in FAULTS:
            raise RuntimeError("fault injected: the toolkit raised")
        if not self._ready or "inference" in FAULTS or not inputs or self._model is None:
            print("E inference: failed")
            return None
        n, c, h, w = self._model["shape"]
        x = np.asarray(inputs[0])
        if inputs_pass_through and inputs_pass_through[0]:
            q = x.reshape(-1).view(np.int8)
            if q.size != n * h * w * c:
                print("E inference: pass-through input size mismatch")
                return None
            q = q.reshape(n, h, w, c).transpose(0, 3, 1, 2)
            out = (q.astype(np.float32) - self._model["zp"]) * self._model["scale"]
            return [out.astype(np.float32)]
        if data_format in (None, "nhwc") and x.ndim == 4:
            x = x.transpose(0, 3, 1, 2)
        if x.shape != (n, c, h, w):
            print(f"E inference: input shape {x.shape} != {(n, c, h, w)}")
            return None
        return [x.astype(np.float32)]

    def release(self) -> None:
        CALLS.append(("release", {}))
        self._ready = False
        if "release" in FAULTS:
            raise RuntimeError("fault injected: release failed")
