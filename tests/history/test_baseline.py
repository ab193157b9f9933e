"""Bands and regressions: median ± max(k · 1.4826 · MAD, floor), one-sided, with the inf rules,
the severities and a message naming the figure, the band and the runs."""

from __future__ import annotations

import math
import statistics
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npu_hil.harness.history.baseline import MAD_SCALE, Settings, band_for, evaluate, finding_dict
from npu_hil.harness.history.model import CasePoint

NODE = "suite/test_ref.py::test_reference_model[identity-rk3588-01]"
SETTINGS = Settings()


def _point(
    run: int,
    p50: float | None = None,
    *,
    snr: Any = None,
    cosine: Any = None,
    runs: int = 1,
    p99: float | None = None,
    outcome: str = "passed",
    ran_on: str = "sim",
    noisy: str = "",
) -> CasePoint:
    latency = None
    if p50 is not None:
        latency = {"p50_ms": p50, "p99_ms": p99 if p99 is not None else p50, "runs": runs}
    accuracy = None if snr is None and cosine is None else {"snr_db": snr, "cosine": cosine}
    return CasePoint(
        f"20261201T{run:06d}Z-abcdef",
        NODE,
        "rk3588-01",
        "rk3588",
        outcome,
        ran_on,
        latency,
        accuracy,
        noisy,
    )


def _check(point: CasePoint, earlier: list[CasePoint], **kw: Any) -> list[Any]:
    options = {"perf": False, "accuracy_thresholds": False, "settings": SETTINGS, **kw}
    return evaluate(point, earlier, **options)


def test_the_band_is_median_plus_minus_k_mad_over_the_floor() -> None:
    earlier = [_point(i, v) for i, v in enumerate([1.0, 1.2, 1.1, 5.0, 1.05])]
    band = band_for("p50_ms", earlier, SETTINGS)
    assert band is not None
    assert band.median == 1.1
    assert band.mad == pytest.approx(0.1)  # deviations 0.1 0.1 0 3.9 0.05: the wild run is out
    half = 3 * MAD_SCALE * 0.1
    assert (band.low, band.high) == (pytest.approx(1.1 - half), pytest.approx(1.1 + half))
    assert band.runs == tuple(p.run_id for p in earlier)


def test_one_earlier_run_makes_a_band_of_the_floor() -> None:
    band = band_for("p50_ms", [_point(1, 0.075)], SETTINGS)
    assert band is not None and band.mad == 0
    assert (band.low, band.high) == (pytest.approx(0.0675), pytest.approx(0.0825))
    tiny = band_for("p50_ms", [_point(1, 0.001)], SETTINGS)
    assert tiny is not None and tiny.high == pytest.approx(0.006)  # the 0.005 ms floor
    snr = band_for("snr_db", [_point(1, snr=40.0)], SETTINGS)
    assert snr is not None and (snr.low, snr.high) == (39.0, 41.0)
    cos = band_for("cosine", [_point(1, cosine=0.999)], SETTINGS)
    assert cos is not None and cos.low == pytest.approx(0.9989)


def test_only_passed_points_that_ran_on_a_board_count_and_the_last_k() -> None:
    earlier = [
        _point(1, 9.0, outcome="failed"),
        _point(2, 9.0, ran_on=""),
        _point(3, 9.0, outcome="error"),
        *[_point(10 + i, 1.0) for i in range(12)],
    ]
    band = band_for("p50_ms", earlier, Settings(runs=10))
    assert band is not None and band.median == 1.0 and len(band.runs) == 10
    assert band.runs[0].startswith("20261201T000012Z")
    assert band_for("p50_ms", earlier[:3], SETTINGS) is None
    assert _check(_point(99, 100.0), earlier[:3]) == []


def test_a_slower_case_is_a_regression_with_the_band_in_its_message() -> None:
    earlier = [_point(1, 0.075), _point(2, 0.075)]
    (found,) = _check(_point(3, 0.090), earlier)
    assert (found.metric, found.severity, found.value) == ("p50_ms", "warning", 0.090)
    assert found.message == (
        f"rk3588-01 {NODE}: p50_ms 0.090 ms above its baseline 0.075 (band 0.0675..0.0825, k=3, "
        "MAD 0, from 2 runs: 20261201T000001Z-abcdef, 20261201T000002Z-abcdef)"
    )
    (perf,) = _check(_point(3, 0.090), earlier, perf=True)
    assert perf.severity == "failure"
    (noisy,) = _check(_point(3, 0.090, noisy="thermal_zone0 rose 7.0 °C"), earlier, perf=True)
    assert noisy.severity == "noisy" and "noisy, not failing: thermal_zone0 rose" in noisy.message
    assert finding_dict(found)["band"]["runs"] == list(found.band.runs)


def test_faster_or_more_accurate_is_never_a_regression() -> None:
    earlier = [_point(1, 1.0, snr=30.0, cosine=0.99), _point(2, 1.0, snr=30.0, cosine=0.99)]
    assert _check(_point(3, 0.1, snr=60.0, cosine=1.0), earlier) == []


def test_p99_needs_ten_runs_on_both_sides() -> None:
    earlier = [_point(1, 1.0, p99=1.0, runs=10)]
    assert [f.metric for f in _check(_point(2, 1.0, p99=2.0, runs=10), earlier)] == ["p99_ms"]
    assert _check(_point(2, 1.0, p99=2.0, runs=9), earlier) == []
    assert _check(_point(2, 1.0, p99=2.0, runs=10), [_point(1, 1.0, p99=1.0, runs=5)]) == []


def test_the_inf_rules() -> None:
    exact = [_point(1, snr="inf", cosine=1.0), _point(2, snr="inf", cosine=1.0)]
    (drop,) = _check(_point(3, snr=45.0, cosine=1.0), exact)
    assert (drop.metric, drop.severity) == ("snr_db", "warning")
    assert "snr_db 45.0 dB below its baseline inf" in drop.message
    assert finding_dict(drop)["band"]["median"] == "inf"
    assert _check(_point(3, snr="inf", cosine=1.0), exact) == []
    assert _check(_point(3, snr="inf", cosine=1.0), [_point(1, snr=20.0, cosine=1.0)]) == []
    (failing,) = _check(_point(3, snr=45.0, cosine=1.0), exact, accuracy_thresholds=True)
    assert failing.severity == "failure"
    # a noisy board says nothing about accuracy: still a warning
    (kept,) = _check(_point(3, snr=45.0, cosine=1.0, noisy="moved"), exact)
    assert kept.severity == "warning"


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="runs"):
        Settings(runs=0)
    with pytest.raises(ValueError, match="k"):
        Settings(k=-1)
    with pytest.raises(ValueError, match="percentage"):
        Settings(latency_floor_percent=math.nan)


latencies = st.lists(
    st.floats(min_value=0.001, max_value=1000.0, allow_nan=False), min_size=1, max_size=12
)
ks = st.floats(min_value=0.0, max_value=10.0)


@pytest.mark.slow
@given(latencies, ks, st.floats(min_value=0.0, max_value=1.0))
def test_a_value_inside_the_band_is_never_flagged(values: list[float], k: float, at: float) -> None:
    settings = Settings(k=k)
    earlier = [_point(i, v) for i, v in enumerate(values)]
    band = band_for("p50_ms", earlier, settings)
    assert band is not None
    inside = band.low + at * (band.high - band.low)
    assert _check(_point(99, inside), earlier, settings=settings, perf=True) == []


@pytest.mark.slow
@given(latencies, ks, st.floats(min_value=1e-6, max_value=100.0))
def test_a_value_above_the_band_is_always_flagged(
    values: list[float], k: float, over: float
) -> None:
    settings = Settings(k=k)
    earlier = [_point(i, v) for i, v in enumerate(values)]
    band = band_for("p50_ms", earlier, settings)
    assert band is not None
    value = band.high * (1 + over)
    (found,) = _check(_point(99, value), earlier, settings=settings, perf=True)
    assert found.severity == "failure" and found.band == band


@pytest.mark.slow
@given(latencies, ks)
def test_the_band_contains_the_median(values: list[float], k: float) -> None:
    band = band_for("p50_ms", [_point(i, v) for i, v in enumerate(values)], Settings(k=k))
    assert band is not None
    # the last K (10) runs only
    assert band.low <= band.median == statistics.median(values[-10:]) <= band.high
    assert band.high - band.median >= max(0.1 * band.median, 0.005) * (1 - 1e-12)


@given(st.floats(min_value=0.001, max_value=1000.0), st.integers(1, 10), ks)
def test_identical_values_have_no_mad_and_the_floor_decides(
    value: float, count: int, k: float
) -> None:
    earlier = [_point(i, value) for i in range(count)]
    band = band_for("p50_ms", earlier, Settings(k=k, latency_floor_percent=20))
    assert band is not None and band.mad == 0
    assert band.high - band.median == pytest.approx(max(0.2 * value, 0.005))
