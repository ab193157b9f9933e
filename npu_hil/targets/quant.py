"""Vendor quantization schemes (each class says its formula; all round half to even, as
``numpy.rint``, then clip to the storage type) and the sim's choice of their parameters, from the
range of the very data it quantizes (deterministic; a real compiled model fixes them from a
calibration set): an all-zero tensor or channel gets scale 1, radix 0, shift 0, and integer data
handed to a runtime as is is calibrated on its type's full range (lossless for uint8 and int8)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from npu_hil.harness.errors import DeviceError

INT16_MAX_DEVICE = 32766
"""KL730 clips int16 to [-32768, 32766] (spec/kl730-layouts.md, quantization)."""
INT8 = np.dtype("int8")
FLOAT16 = np.dtype("float16")


class Quantizer(Protocol):
    """Float values ↔ the integers (or floats) a runtime stores."""

    @property
    def dtype(self) -> np.dtype: ...

    def quantize(self, values: np.ndarray) -> np.ndarray: ...

    def dequantize(self, stored: np.ndarray) -> np.ndarray: ...

    def step(self, ndim: int) -> np.ndarray:
        """One quantized unit in float terms (broadcastable over a tensor of ``ndim`` axes)."""
        ...


def _limits(dtype: np.dtype, top: int | None = None) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max if top is None else min(top, info.max))


def _store(values: np.ndarray, dtype: np.dtype, top: int | None = None) -> np.ndarray:
    low, high = _limits(dtype, top)
    stored: np.ndarray = np.clip(values, low, high).astype(dtype)
    return stored


def _as_float(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def _amax(values: np.ndarray, axis: int | None) -> np.ndarray:
    """max |x| over the tensor, or per index of ``axis``."""
    magnitude = np.abs(_as_float(values))
    if axis is None:
        return np.asarray([magnitude.max(initial=0.0)])
    others = tuple(a for a in range(magnitude.ndim) if a != axis)
    return np.asarray(magnitude.max(axis=others, initial=0.0)).reshape(-1)


def as_float32(value: float) -> float:
    """``value`` rounded to float32, as a Python float (a runtime reports float32 scales)."""
    return float(np.float32(value))


# ------------------------------------------------------------------------------ schemes


@dataclass(frozen=True)
class Affine:
    """RKNN ``AFFINE_ASYMMETRIC``: ``x = (q - zero_point) * scale``."""

    zero_point: int
    scale: float
    dtype: np.dtype = INT8

    def quantize(self, values: np.ndarray) -> np.ndarray:
        array = np.asarray(values)
        if self.scale == 1.0 and array.dtype.kind in "iu" and array.dtype.itemsize <= 4:
            # Integers at unit scale (a uint8 image into int8): rint(x / 1) is x, so the
            # float64 pass changes nothing and costs most of a simulated run.
            return _store(array.astype(np.int64) + self.zero_point, self.dtype)
        return _store(np.rint(_as_float(array) / self.scale) + self.zero_point, self.dtype)

    def dequantize(self, stored: np.ndarray) -> np.ndarray:
        dequantized: np.ndarray = (_as_float(stored) - self.zero_point) * self.scale
        return dequantized

    def step(self, ndim: int) -> np.ndarray:
        return np.asarray(self.scale)


@dataclass(frozen=True)
class FixedPoint:
    """Kneron fixed point: ``x = q / (scale * 2**radix)``, per tensor or per channel along
    ``axis``; ``value_bits`` 15 for the KL730's 16-bit data (bit 0 dropped), else the type's."""

    radix: tuple[int, ...]
    scale: tuple[float, ...]
    axis: int | None = None
    dtype: np.dtype = INT8
    value_bits: int = 8

    def _factor(self, ndim: int) -> np.ndarray:
        factor: np.ndarray = per_axis(self.scale, self.axis, ndim) * np.exp2(
            per_axis(self.radix, self.axis, ndim)
        )
        return factor

    def _top(self) -> int | None:
        return INT16_MAX_DEVICE if self.dtype.itemsize == 2 else None

    def quantize(self, values: np.ndarray) -> np.ndarray:
        scaled = _as_float(values) * self._factor(np.ndim(values))
        if self.value_bits == 15:
            # 15 significant bits: round to the nearest even number, which is what survives
            # the runtime's ``u16 & 0xFFFE``.
            return _store(2.0 * np.rint(scaled / 2.0), self.dtype, self._top())
        return _store(np.rint(scaled), self.dtype, self._top())

    def dequantize(self, stored: np.ndarray) -> np.ndarray:
        dequantized: np.ndarray = _as_float(stored) / self._factor(np.ndim(stored))
        return dequantized

    def step(self, ndim: int) -> np.ndarray:
        unit = 2.0 if self.value_bits == 15 else 1.0
        step: np.ndarray = unit / self._factor(ndim)
        return step


@dataclass(frozen=True)
class HorizonScale:
    """Horizon ``SCALE``: ``x = (q - zero_point) * scale`` along ``axis`` (quantizeAxis)."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None
    dtype: np.dtype = INT8

    def quantize(self, values: np.ndarray) -> np.ndarray:
        ndim = np.ndim(values)
        scaled = np.rint(_as_float(values) / per_axis(self.scale, self.axis, ndim))
        return _store(scaled + per_axis(self.zero_point, self.axis, ndim), self.dtype)

    def dequantize(self, stored: np.ndarray) -> np.ndarray:
        ndim = np.ndim(stored)
        zero = per_axis(self.zero_point, self.axis, ndim)
        dequantized: np.ndarray = (_as_float(stored) - zero) * per_axis(self.scale, self.axis, ndim)
        return dequantized

    def step(self, ndim: int) -> np.ndarray:
        return per_axis(self.scale, self.axis, ndim)


@dataclass(frozen=True)
class HorizonShift:
    """Horizon ``SHIFT``: ``x = q / 2**shift`` along ``axis`` (quantizeAxis)."""

    shift: tuple[int, ...]
    axis: int | None = None
    dtype: np.dtype = INT8

    def _factor(self, ndim: int) -> np.ndarray:
        factor: np.ndarray = np.exp2(per_axis(self.shift, self.axis, ndim))
        return factor

    def quantize(self, values: np.ndarray) -> np.ndarray:
        return _store(np.rint(_as_float(values) * self._factor(np.ndim(values))), self.dtype)

    def dequantize(self, stored: np.ndarray) -> np.ndarray:
        dequantized: np.ndarray = _as_float(stored) / self._factor(np.ndim(stored))
        return dequantized

    def step(self, ndim: int) -> np.ndarray:
        step: np.ndarray = 1.0 / self._factor(ndim)
        return step


@dataclass(frozen=True)
class Cast:
    """No quantization (float16 models, F32 outputs, quantiType NONE): a cast, rounding half to
    even and clipping when the stored type is an integer."""

    dtype: np.dtype = FLOAT16

    def quantize(self, values: np.ndarray) -> np.ndarray:
        if self.dtype.kind in "iu":
            return _store(np.rint(_as_float(values)), self.dtype)
        stored: np.ndarray = np.asarray(values).astype(self.dtype)
        return stored

    def dequantize(self, stored: np.ndarray) -> np.ndarray:
        return _as_float(stored)

    def step(self, ndim: int) -> np.ndarray:
        return np.asarray(1.0 if self.dtype.kind in "iu" else 0.0)


def float_graph(inputs: Sequence[Mapping[str, object]]) -> str:
    """``QuantModel.numerics`` of a vendor whose simulated board computes the float graph and
    quantizes only inputs and outputs (its compiler's numerics are not modeled through it yet)."""
    return "float"


# ----------------------------------------------------------------- parameter choice


def choose_affine(values: np.ndarray, dtype: np.dtype | str = "int8") -> Affine:
    """Affine parameters covering the data's range widened to include 0 (so 0 is exact):
    ``scale`` = range / 255 as float32, ``zp`` = rint(-128 - min / scale)."""
    kind = np.dtype(dtype)
    low_q, high_q = _limits(kind)
    data = _as_float(values)
    low = min(0.0, float(data.min(initial=0.0)))
    high = max(0.0, float(data.max(initial=0.0)))
    if not math.isfinite(low) or not math.isfinite(high) or high <= low:
        return Affine(0 if low_q < 0 else low_q, 1.0, kind)
    scale = as_float32((high - low) / (high_q - low_q))
    zero_point = int(np.clip(np.rint(low_q - low / scale), low_q, high_q))
    return Affine(zero_point, scale, kind)


def affine_for_type(source: np.dtype | str, dtype: np.dtype | str = "int8") -> Affine:
    """Affine parameters covering an integer type's whole range (uint8 → scale 1, zp -128)."""
    info = np.iinfo(np.dtype(source))
    return choose_affine(np.asarray([info.min, info.max], dtype=np.float64), dtype)


def choose_fixed_point(
    values: np.ndarray,
    dtype: np.dtype | str = "int8",
    *,
    value_bits: int | None = None,
    axis: int | None = None,
) -> FixedPoint:
    """Radix and scale per tensor (``axis`` None) or per channel, so max |x| maps onto qmax:
    ``radix`` = floor(log2(qmax / amax)) (possibly negative), ``scale`` = qmax / (amax * 2**radix)
    as float32, in [1, 2)."""
    kind = np.dtype(dtype)
    bits = value_bits if value_bits is not None else (15 if kind.itemsize == 2 else 8)
    top = _limits(kind, INT16_MAX_DEVICE if kind.itemsize == 2 else None)[1]
    radixes, scales = [], []
    for amax in _amax(values, axis):
        if not math.isfinite(float(amax)) or amax <= 0:
            radixes.append(0)
            scales.append(1.0)
            continue
        radix = math.floor(math.log2(top / float(amax)))
        radixes.append(radix)
        scales.append(as_float32(top / (float(amax) * 2.0**radix)))
    return FixedPoint(tuple(radixes), tuple(scales), axis, kind, bits)


def fixed_point_for_type(dtype: np.dtype | str) -> FixedPoint:
    """Integer data taken as the NPU's fixed point as is: radix 0, scale 1."""
    kind = np.dtype(dtype)
    return FixedPoint((0,), (1.0,), None, kind, 15 if kind.itemsize == 2 else 8 * kind.itemsize)


def choose_horizon_scale(
    values: np.ndarray, axis: int | None = 1, dtype: np.dtype | str = "int8"
) -> HorizonScale:
    """Symmetric SCALE per channel along ``axis`` (per tensor when None): ``scale_c`` = amax_c /
    127 as float32, zero point 0."""
    kind = np.dtype(dtype)
    top = _limits(kind)[1]
    scales = tuple(
        as_float32(float(a) / top) if math.isfinite(float(a)) and a > 0 else 1.0
        for a in _amax(values, axis)
    )
    return HorizonScale(scales, (0,) * len(scales), axis, kind)


def choose_horizon_shift(
    values: np.ndarray, axis: int | None = 1, dtype: np.dtype | str = "int8"
) -> HorizonShift:
    """SHIFT per channel along ``axis``: the largest shift in [0, 31] keeping max |x| in range."""
    kind = np.dtype(dtype)
    top = _limits(kind)[1]
    shifts = tuple(
        int(np.clip(math.floor(math.log2(top / float(a))), 0, 31))
        if math.isfinite(float(a)) and a > 0
        else 0
        for a in _amax(values, axis)
    )
    return HorizonShift(shifts, axis, kind)


def per_axis(
    values: Sequence[float] | float, axis: int | None, ndim: int, what: str = "quantization"
) -> np.ndarray:
    """Per-tensor (one value: a scalar) or per-channel parameters shaped to broadcast along
    ``axis``. More values than a tensor's axis can take is the device's error, not a numpy one."""
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if array.size == 1:
        return array.reshape(())
    if axis is None or not 0 <= axis < ndim:
        raise DeviceError(f"{what}: {array.size} values along axis {axis} of a {ndim}-D tensor")
    shape = [1] * ndim
    shape[axis] = array.size
    return array.reshape(shape)
