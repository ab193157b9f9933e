"""The latency figures of N timed runs (npu_hil/harness/latency.py) and how the reports show
them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npu_hil.harness.latency import latency, percentile
from npu_hil.harness.report.perf import board_state_properties, latency_properties
from npu_hil.harness.report.records import TestRecord
from npu_hil.harness.report.summary import build_summary

DURATIONS = st.lists(
    st.floats(min_value=0.0, max_value=10.0, allow_nan=False, allow_infinity=False),
    min_size=1,
    max_size=300,
)


@pytest.mark.slow
@given(DURATIONS)
def test_the_figures_are_ordered_and_measured(durations: list[float]) -> None:
    lat = latency(durations)
    ms = [d * 1000 for d in durations]
    assert lat.runs == len(durations)
    assert lat.min_ms <= lat.p50_ms <= lat.p90_ms <= lat.p99_ms <= lat.max_ms
    assert lat.min_ms == min(ms) and lat.max_ms == max(ms)
    # nearest rank: every percentile is a duration that was measured
    assert {lat.p50_ms, lat.p90_ms, lat.p99_ms} <= set(ms)
    assert lat.jitter_ms == lat.p99_ms - lat.p50_ms >= 0
    assert lat.min_ms <= lat.mean_ms * (1 + 1e-12) and lat.mean_ms <= lat.max_ms * (1 + 1e-12)
    assert lat.stdev_ms >= 0


def test_one_run_is_every_figure() -> None:
    lat = latency([0.004], warmup=3)
    assert (lat.runs, lat.warmup) == (1, 3)
    assert lat.p50_ms == lat.p90_ms == lat.p99_ms == lat.min_ms == lat.max_ms == 4.0
    assert lat.jitter_ms == 0.0 and lat.stdev_ms == 0.0


def test_nearest_rank_on_a_known_set() -> None:
    # 1..100 ms: p50 is the 50th, p90 the 90th, p99 the 99th value
    lat = latency([i / 1000 for i in range(100, 0, -1)])
    assert (lat.p50_ms, lat.p90_ms, lat.p99_ms) == pytest.approx((50, 90, 99))
    assert lat.jitter_ms == pytest.approx(49)
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 51) == 3.0


def test_no_runs_is_refused() -> None:
    with pytest.raises(ValueError, match="no runs"):
        latency([])
    with pytest.raises(ValueError, match="not in"):
        percentile([1.0], 0)


STATE = {
    "before": {
        "cpu": [{"policy": "policy0", "governor": "schedutil", "cur_freq_khz": 1800000}],
        "npu": [{"device": "fdab0000.npu", "governor": "userspace", "cur_freq_hz": None}],
        "ddr": [],
        "thermal": [{"zone": "thermal_zone0", "type": "soc-thermal", "temp_mc": 45000}],
        "loadavg": [0.5, 0.25, 0.1],
        "absent": ["/sys/class/devfreq/fdab0000.npu/cur_freq", "/sys/class/devfreq/*dmc*"],
        "unreadable": [],
    }
}


def test_junit_properties_and_summary_carry_the_figures() -> None:
    lat = latency([0.001, 0.002, 0.003], warmup=1).to_dict()
    props = latency_properties(lat)
    assert props["latency.p50_ms"] == "2.000000" and props["latency.runs"] == "3"
    assert props["latency.source"] == "agent" and props["latency.warmup"] == "1"
    state = board_state_properties(STATE)
    assert state["board_state.before.cpu.policy0.governor"] == "schedutil"
    assert state["board_state.before.cpu.policy0.cur_freq_khz"] == "1800000"
    assert state["board_state.before.npu.fdab0000.npu.cur_freq_hz"] == "absent"
    assert state["board_state.before.thermal.thermal_zone0.temp_mc"] == "45000"
    assert state["board_state.before.loadavg"] == "0.5 0.25 0.1"
    assert "/sys/class/devfreq/*dmc*" in state["board_state.before.absent"]
    record = TestRecord("t::a[b]", "passed", 0.1, board="b", latency=lat, board_state=STATE)
    quiet = TestRecord("t::c[b]", "passed", 0.1, board="b")
    other = TestRecord("t::d[b]", "passed", 0.1, board="b", latency={**lat, "p50_ms": 4.0})
    summary = build_summary([record, quiet, other], {})
    # Per target, not per case: how many measured, the median p50, the worst p99.
    assert summary["latency"] == {
        "(no target)": {"cases": 2, "p50_ms_median": 3.0, "p99_ms_max": 3.0}
    }
    assert summary["measurements_file"] == "measurements.json"
    assert TestRecord.from_dict(record.to_dict()) == record
