"""What the regression suite runs, and what the vendor tables say each case must give (never the
simulator): a case the tables list round-trips byte for byte, one they do not is refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from npu_hil.harness.codec import get_layout
from npu_hil.harness.errors import DeviceError, LayoutError
from npu_hil.targets import rockchip
from npu_hil.targets.rockchip.observed import npu_input_types

SHAPES: tuple[tuple[int, int, int, int], ...] = (
    (1, 3, 5, 7),
    (1, 1, 1, 1),
    (1, 4, 6, 8),
    (1, 8, 4, 4),
    (1, 17, 3, 9),
    (2, 5, 3, 2),
)
"""NCHW shapes: image-like channel counts (1, 3, 4) and others, odd sizes, a batch of two."""

NO_CPU_PREPROCESSING = ("rv1103", "rv1106", "rv1103b")
"""RKNN2 input note 7: these SoCs do not run mean/scale/quant on the CPU."""


def shape_id(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def input_dtype(target: str, vendor: str) -> np.dtype:
    """The dtype a test feeds: what the target's input table takes without CPU preprocessing
    (uint8 images on int8 RKNN SoCs, float16 on RK2118; float data elsewhere)."""
    if vendor == "rockchip":
        return np.dtype("float16" if rockchip.default_first_layer(target) == "float16" else "uint8")
    return np.dtype("float32")


def tensor(shape: tuple[int, ...], dtype: np.dtype, seed: int = 0) -> np.ndarray:
    """Deterministic data that uses the dtype's range (so quantization is exercised)."""
    rng = np.random.default_rng(seed + sum(shape))
    if dtype.kind == "u":
        return rng.integers(0, 256, size=shape).astype(dtype)
    if dtype.kind == "i":
        return rng.integers(-128, 128, size=shape).astype(dtype)
    return (rng.standard_normal(shape) * 2).astype(dtype)


def _refusal(check: Callable[[], Any]) -> type[Exception] | None:
    """LayoutError when the tables refuse what ``check`` asks of them, else None."""
    try:
        check()
    except LayoutError:
        return LayoutError
    return None


def rknn_input_refusal(
    target: str, layout: str, shape: tuple[int, ...], dtype: np.dtype
) -> type[Exception] | None:
    """None when the tables list this input, else the error the runtime must raise."""
    first = rockchip.default_first_layer(target)
    if _refusal(lambda: get_layout(target, layout, shape, dtype, role="input", first_layer=first)):
        return LayoutError
    on_npu = npu_input_types(target)
    if target in NO_CPU_PREPROCESSING and rockchip.input_type_of(dtype.name) not in on_npu:
        return DeviceError
    return None


RKNN_NATIVE_OUTPUTS = ("NC1HWC2", "NHWC")
"""The output layouts a real runtime hands out as native buffers (RKNN_QUERY_NATIVE_OUTPUT_ATTR,
RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR): what ``rknn_native`` reads back on a board."""


def rknn_native_input_layout(shape: tuple[int, ...]) -> str:
    """A compiled model's native input: NHWC when C is 1, 3 or 4, else NC1HWC2 (what the
    runtimes reported for every model of the observations but RK2118's)."""
    return "NHWC" if len(shape) == 4 and shape[1] in (1, 3, 4) else "NC1HWC2"


def rknn_board_gap(board: Any, role: str, layout: str, shape: tuple[int, ...]) -> str | None:
    """Why a real board (not simulated) cannot run this layout case with its adapter, or None.

    A simulated runtime lays a tensor out in whichever layout it is asked for; a compiled model
    on a real runtime has one native input layout, and hands out two native output layouts."""
    if board.simulated:
        return None
    if board.adapter == "rknnlite":
        return (
            "rknnlite returns converted outputs (rknn_outputs_get) and no input buffers: the "
            "layout cases need the native buffers of rknn_native"
        )
    if role == "input" and layout != rknn_native_input_layout(shape):
        return (
            f"a compiled model's native input for {shape_id(shape)} is "
            f"{rknn_native_input_layout(shape)}; the zero-copy path takes only that layout"
        )
    if role == "output" and layout not in RKNN_NATIVE_OUTPUTS:
        return f"{layout} is not a native output buffer (the runtime hands out NC1HWC2, NHWC)"
    return None


def rknn_output_refusal(target: str, layout: str) -> type[Exception] | None:
    precision = rockchip.default_first_layer(target)
    return _refusal(lambda: rockchip.output_row(target, precision=precision, rank=4, layout=layout))


def codec_refusal(
    target: str, layout: str, shape: tuple[int, ...], dtype: Any, role: str
) -> type[Exception] | None:
    """KL730 and Horizon: the codec refuses what the format tables do not serve."""
    return _refusal(lambda: get_layout(target, layout, shape, dtype, role=role))
