"""Vendor quantization: round half to even, clip, and round trips within one quantized unit."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from npu_hil.targets.quant import (
    Affine,
    Cast,
    FixedPoint,
    HorizonScale,
    HorizonShift,
    Quantizer,
    affine_for_type,
    choose_affine,
    choose_fixed_point,
    choose_horizon_scale,
    choose_horizon_shift,
    fixed_point_for_type,
)

DATA = {
    "normal": np.random.default_rng(0).standard_normal((2, 6, 5, 7)) * 3,
    "positive": np.random.default_rng(1).uniform(0.5, 9.0, (1, 4, 3, 5)),
    "negative": -np.random.default_rng(2).uniform(0.0, 0.01, (1, 3, 2, 2)),
    "wide": np.random.default_rng(3).uniform(-4000, 2500, (1, 2, 3, 4)),
}
CHOOSERS: dict[str, Callable[[np.ndarray], Quantizer]] = {
    "affine": lambda x: choose_affine(x),
    "fixed8": lambda x: choose_fixed_point(x, "int8"),
    "fixed16": lambda x: choose_fixed_point(x, "int16"),
    "fixed16-per-channel": lambda x: choose_fixed_point(x, "int16", axis=1),
    "horizon-scale": lambda x: choose_horizon_scale(x, axis=1),
    "horizon-scale-tensor": lambda x: choose_horizon_scale(x, axis=None),
    "horizon-shift": lambda x: choose_horizon_shift(x, axis=1),
}


# SHIFT cannot go below 0, so values beyond the int8 range clip (test_shift_clips_wide_data).
PAIRS = [(s, d) for s in CHOOSERS for d in DATA if (s, d) != ("horizon-shift", "wide")]


@pytest.mark.parametrize(("scheme", "data"), PAIRS)
def test_round_trip_within_one_quantized_unit(scheme: str, data: str) -> None:
    values = DATA[data]
    quant = CHOOSERS[scheme](values)
    stored = quant.quantize(values)
    assert stored.dtype == quant.dtype
    error = np.abs(quant.dequantize(stored) - values)
    step = np.broadcast_to(quant.step(values.ndim), values.shape)
    # Within half a unit where rounding decides; one unit allows the float32 scale's rounding.
    assert np.all(error <= step * 1.0 + 1e-12)
    assert np.mean(error <= step / 2 + 1e-9) > 0.99


def test_shift_clips_wide_data() -> None:
    quant = choose_horizon_shift(DATA["wide"], axis=1)
    assert set(quant.shift) == {0}
    wide = np.array([500.0, -500.0]).reshape(1, 2, 1, 1)  # one value per channel
    assert quant.quantize(wide).ravel().tolist() == [127, -128]


def test_rounding_is_half_to_even_and_clips() -> None:
    affine = Affine(0, 1.0)
    q = affine.quantize(np.array([0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0]))
    assert q.tolist() == [0, 2, 2, 0, -2, 127, -128]
    shifted = Affine(-128, 1.0)
    assert shifted.quantize(np.array([0.0, 255.0, 127.5])).tolist() == [-128, 127, 0]
    assert HorizonShift((1,)).quantize(np.array([0.25, 0.75])).tolist() == [0, 2]
    assert HorizonScale((0.5,), (3,)).quantize(np.array([0.25, 100.0])).tolist() == [3, 127]


def test_affine_keeps_zero_exact() -> None:
    for values in DATA.values():
        quant = choose_affine(values)
        assert quant.dequantize(quant.quantize(np.zeros(1)))[0] == 0.0
        assert -128 <= quant.zero_point <= 127


def test_integer_inputs_use_their_type_range_losslessly() -> None:
    assert affine_for_type("uint8") == Affine(-128, 1.0)
    assert affine_for_type("int8") == Affine(0, 1.0)
    pixels = np.arange(256, dtype=np.uint8)
    quant = affine_for_type("uint8")
    assert np.array_equal(quant.dequantize(quant.quantize(pixels)), pixels)
    assert fixed_point_for_type("int8") == FixedPoint((0,), (1.0,), None, np.dtype("int8"), 8)


def test_kl730_fixed_point_maps_amax_onto_qmax() -> None:
    values = np.array([-3.0, 1.0, 2.0])
    quant = choose_fixed_point(values, "int8")
    assert quant.radix == (5,) and 1.0 <= quant.scale[0] < 2.0
    assert quant.quantize(values).tolist()[0] == -127
    big = choose_fixed_point(np.array([1000.0]), "int8")
    assert big.radix[0] < 0  # a negative radix for values beyond the int8 range


def test_kl730_int16_has_15_bits_and_its_own_clip() -> None:
    quant = FixedPoint((0,), (1.0,), None, np.dtype("int16"), 15)
    stored = quant.quantize(np.array([3.0, 5.0, -3.0, 40000.0, -40000.0, 1.0]))
    assert stored.tolist() == [4, 4, -4, 32766, -32768, 0]
    chosen = choose_fixed_point(DATA["normal"], "int16")
    assert chosen.value_bits == 15
    assert np.all(chosen.quantize(DATA["normal"]) % 2 == 0)
    plain = FixedPoint((0,), (1.0,), None, np.dtype("int16"), 16)
    assert plain.quantize(np.array([3.0, 40000.0])).tolist() == [3, 32766]


def test_per_channel_parameters_follow_their_axis() -> None:
    values = np.zeros((1, 3, 2, 2))
    values[0, 0], values[0, 1], values[0, 2] = 1.0, 10.0, 0.0
    scale = choose_horizon_scale(values, axis=1)
    assert scale.scale == (np.float32(1 / 127), np.float32(10 / 127), 1.0)
    assert scale.quantize(values)[0, :, 0, 0].tolist() == [127, 127, 0]
    shift = choose_horizon_shift(values, axis=1)
    assert shift.shift == (6, 3, 0)
    per_channel = choose_fixed_point(values, "int8", axis=1)
    assert len(per_channel.radix) == 3 and per_channel.axis == 1


def test_all_zero_tensors_get_neutral_parameters() -> None:
    zeros = np.zeros((1, 2, 2, 2))
    assert choose_affine(zeros) == Affine(0, 1.0)
    assert choose_fixed_point(zeros).radix == (0,)
    assert choose_horizon_shift(zeros, axis=None).shift == (0,)


def test_cast_is_no_quantization() -> None:
    values = np.array([0.1, -2.5, 3.3], dtype=np.float32)
    assert Cast(np.dtype("float16")).quantize(values).dtype == np.float16
    assert Cast(np.dtype("uint8")).quantize(np.array([2.5, -1.0, 300.0])).tolist() == [2, 0, 255]


@pytest.mark.slow
@given(
    dtype=st.sampled_from(["uint8", "int8", "uint16", "int16", "int32", "uint32"]),
    zero_point=st.integers(-128, 127),
    target=st.sampled_from(["int8", "uint8", "int16"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_integers_at_unit_scale_quantize_as_the_float_formula(
    dtype: str, zero_point: int, target: str, seed: int
) -> None:
    """The integer shortcut at scale 1 gives the bytes the float64 formula gives, clipping
    included, for every integer type a job may carry."""
    info = np.iinfo(dtype)
    values = np.random.default_rng(seed).integers(info.min, info.max, 257, endpoint=True)
    values = values.astype(dtype)
    scheme = Affine(zero_point, 1.0, np.dtype(target))
    formula = np.rint(values.astype(np.float64) / 1.0) + zero_point
    limits = np.iinfo(target)
    expected = np.clip(formula, limits.min, limits.max).astype(target)
    assert scheme.quantize(values).tobytes() == expected.tobytes()
