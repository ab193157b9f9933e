"""Accuracy figures (cosine, SNR, max abs / rel error) and their thresholds."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from npu_hil.harness.diff.accuracy import AccuracyError, Thresholds, measure, thresholds_of

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=64)
vectors = arrays(np.float64, st.integers(1, 64), elements=finite)
nonzero = vectors.filter(lambda a: float(np.max(np.abs(a))) > 1e-3)


# ------------------------------------------------------------------------------ golden values


def test_golden_values_computed_by_hand() -> None:
    ref = np.array([3.0, 4.0])
    dev = np.array([3.0, 5.0])
    figures = measure(dev, ref)
    # cos = (9 + 20) / (5 * sqrt(34)); SNR = 10 log10(25 / 1); max abs 1; max rel 1/4.
    assert figures.cosine == pytest.approx(29 / (5 * math.sqrt(34)))
    assert figures.snr_db == pytest.approx(10 * math.log10(25.0))
    assert figures.max_abs_err == 1.0
    assert figures.max_rel_err == 0.25
    assert figures.elements == 2


def test_opposite_tensors_have_cosine_minus_one() -> None:
    figures = measure(np.array([-1.0, 2.0]), np.array([1.0, -2.0]))
    assert figures.cosine == pytest.approx(-1.0)
    # noise = 2 * ref: SNR = 20 log10(1/2)
    assert figures.snr_db == pytest.approx(20 * math.log10(0.5))


def test_exact_match_is_infinite_snr_written_as_text_in_json() -> None:
    figures = measure(np.array([1, 2, 3], dtype=np.int8), np.array([1.0, 2.0, 3.0]))
    assert figures.snr_db == math.inf
    assert figures.max_abs_err == 0.0
    data = json.loads(json.dumps(figures.to_dict(), allow_nan=False))
    assert data["snr_db"] == "inf"
    assert data["cosine"] == pytest.approx(1.0)
    assert "+inf dB" in figures.summary()


def test_all_zero_reference_has_undefined_cosine_not_nan() -> None:
    figures = measure(np.array([0.0, 0.5]), np.zeros(2))
    assert figures.cosine is None
    assert figures.cosine_note == "the reference is all zeros"
    assert figures.snr_db == -math.inf
    assert figures.max_rel_err is None  # no element with a nonzero reference
    data = json.loads(json.dumps(figures.to_dict(), allow_nan=False))
    assert data["cosine"] is None and data["snr_db"] == "-inf" and data["max_rel_err"] is None
    assert "n/a (the reference is all zeros)" in figures.summary()


def test_both_zero_is_an_exact_match_with_undefined_cosine() -> None:
    figures = measure(np.zeros(4, dtype=np.uint8), np.zeros(4))
    assert figures.cosine is None and figures.cosine_note == "both tensors are all zeros"
    assert figures.snr_db == math.inf


def test_relative_error_skips_zero_reference_elements() -> None:
    figures = measure(np.array([0.1, 2.2]), np.array([0.0, 2.0]))
    assert figures.max_rel_err == pytest.approx(0.1)
    assert figures.max_abs_err == pytest.approx(0.2)


def test_tiny_and_huge_values_neither_underflow_nor_overflow() -> None:
    ref = np.array([1e-200, 2e-200])
    assert measure(ref * 1.01, ref).snr_db == pytest.approx(40.0)
    big = np.array([1e200, 2e200])
    assert measure(big * 1.01, big).snr_db == pytest.approx(40.0)
    assert measure(big * 1.01, big).cosine == pytest.approx(1.0)


def test_shapes_must_hold_the_same_elements() -> None:
    assert measure(np.ones((2, 3)), np.ones(6)).elements == 6
    with pytest.raises(AccuracyError, match=r"output 'y': device tensor of shape \(4,\)"):
        measure(np.ones(4), np.ones(6), "output 'y'")


def test_non_finite_values_are_an_error() -> None:
    with pytest.raises(AccuracyError, match="non-finite"):
        measure(np.array([np.nan]), np.array([1.0]))


# ------------------------------------------------------------------------------ properties


@pytest.mark.slow
@given(nonzero)
def test_cosine_of_a_tensor_with_itself_is_one(x: np.ndarray) -> None:
    figures = measure(x, x)
    assert figures.cosine == pytest.approx(1.0)
    assert figures.snr_db == math.inf


@pytest.mark.slow
@given(nonzero, st.floats(1e-3, 1e3))
def test_cosine_is_invariant_to_scaling(x: np.ndarray, k: float) -> None:
    assert measure(k * x, x).cosine == pytest.approx(1.0)
    assert measure(-k * x, x).cosine == pytest.approx(-1.0)


@pytest.mark.slow
@given(nonzero, nonzero)
def test_cosine_is_symmetric_and_bounded(a: np.ndarray, b: np.ndarray) -> None:
    n = min(a.size, b.size)
    a, b = a[:n], b[:n]
    ab, ba = measure(a, b), measure(b, a)
    if ab.cosine is None:
        return
    assert ab.cosine == pytest.approx(ba.cosine, abs=1e-12)
    assert -1.0 <= ab.cosine <= 1.0
    assert ab.max_abs_err == ba.max_abs_err


@pytest.mark.slow
@given(nonzero, st.floats(1e-3, 1e3))
def test_snr_and_cosine_are_invariant_to_scaling_both(x: np.ndarray, k: float) -> None:
    noise = np.linspace(-1, 1, x.size) * float(np.max(np.abs(x))) * 0.01
    base, scaled = measure(x + noise, x), measure(k * (x + noise), k * x)
    assert scaled.snr_db == pytest.approx(base.snr_db, abs=1e-6)


@pytest.mark.slow
@settings(max_examples=50)
@given(nonzero, st.floats(1e-4, 1.0), st.floats(1.5, 10.0))
def test_snr_decreases_as_noise_grows(x: np.ndarray, level: float, growth: float) -> None:
    pattern = np.cos(np.arange(x.size) + 0.5) * float(np.max(np.abs(x)))
    quiet = measure(x + level * pattern, x)
    loud = measure(x + growth * level * pattern, x)
    assert loud.snr_db < quiet.snr_db
    # Doubling the noise costs 20 log10(growth) dB exactly.
    assert quiet.snr_db - loud.snr_db == pytest.approx(20 * math.log10(growth), abs=1e-6)
    assert loud.max_abs_err >= quiet.max_abs_err


# ------------------------------------------------------------------------------ thresholds


def test_thresholds_breach_messages() -> None:
    figures = measure(np.array([3.0, 5.0]), np.array([3.0, 4.0]))  # SNR ~14 dB
    limits = Thresholds(cosine_min=0.999, snr_db_min=30, max_abs_err_max=0.5, max_rel_err_max=0.1)
    assert limits.breaches(figures) == [
        f"cosine {figures.cosine:.6f} < 0.999",
        "SNR 14.0 dB < 30 dB",
        "max abs error 1 > 0.5",
        "max relative error 0.25 > 0.1",
    ]
    assert Thresholds(snr_db_min=10).breaches(figures) == []
    assert not Thresholds().active and Thresholds(snr_db_min=1).active


def test_undefined_cosine_fails_a_cosine_limit() -> None:
    figures = measure(np.zeros(3), np.zeros(3))
    assert Thresholds(snr_db_min=200).breaches(figures) == []  # exact match
    (message,) = Thresholds(cosine_min=0.9).breaches(figures)
    assert "cosine undefined (both tensors are all zeros)" in message


def test_a_tests_thresholds_override_the_manifests() -> None:
    merged = Thresholds(cosine_min=0.99, snr_db_min=30).merged(Thresholds(snr_db_min=40))
    assert merged == Thresholds(cosine_min=0.99, snr_db_min=40)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([0.9], r"here: expected a mapping of cosine_min"),
        ({"cosine": 0.9}, r"here: unknown key\(s\) cosine; expected some of cosine_min"),
        ({"cosine_min": "high"}, r"here.cosine_min: expected a finite number .*'high'"),
        ({"snr_db_min": True}, r"here.snr_db_min: expected a finite number"),
        ({"snr_db_min": float("nan")}, r"here.snr_db_min: expected a finite number"),
        ({"cosine_min": 1.5}, r"here.cosine_min: expected a cosine in \[-1, 1\], got 1.5"),
        ({"max_abs_err_max": -1}, r"here.max_abs_err_max: expected an error limit >= 0"),
    ],
)
def test_thresholds_are_checked(value: object, message: str) -> None:
    with pytest.raises(AccuracyError, match=message):
        thresholds_of(value, "here")  # type: ignore[arg-type]


def test_thresholds_from_a_mapping() -> None:
    assert thresholds_of({"cosine_min": 0.99, "snr_db_min": 30}, "x") == Thresholds(0.99, 30.0)
    assert thresholds_of(None, "x") is None
