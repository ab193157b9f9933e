"""A board whose temperature or clocks moved during the timed runs is noisy, with the reason."""

from __future__ import annotations

import copy
from typing import Any

from npu_hil.harness.history.model import noise_reason


def _reading(temp_mc: int = 45000, khz: int = 1800000, npu_hz: int = 1000000000) -> dict[str, Any]:
    return {
        "cpu": [{"policy": "policy0", "governor": "schedutil", "cur_freq_khz": khz}],
        "npu": [{"device": "fdab0000.npu", "governor": "userspace", "cur_freq_hz": npu_hz}],
        "ddr": [{"device": "dmc", "governor": "dmc_ondemand", "cur_freq_hz": 2112000000}],
        "thermal": [{"zone": "thermal_zone0", "type": "soc-thermal", "temp_mc": temp_mc}],
        "loadavg": [0.1, 0.2, 0.3],
        "absent": [],
        "unreadable": [],
    }


def test_a_steady_board_is_not_noisy() -> None:
    assert noise_reason({"before": _reading(), "after": _reading(temp_mc=49999)}) == ""


def test_a_temperature_rise_and_a_clock_drop_are_named() -> None:
    state = {"before": _reading(), "after": _reading(temp_mc=52000, khz=1416000)}
    assert noise_reason(state) == (
        "thermal_zone0 rose 7.0 °C during the runs; cpufreq policy0 1800000 -> 1416000 kHz"
    )


def test_five_degrees_is_the_step_either_way() -> None:
    assert noise_reason({"before": _reading(), "after": _reading(temp_mc=40000)}) == (
        "thermal_zone0 fell 5.0 °C during the runs"
    )


def test_npu_ddr_and_governor_changes_count() -> None:
    after = _reading(npu_hz=600000000)
    after["ddr"][0]["governor"] = "performance"
    reason = noise_reason({"before": _reading(), "after": after})
    assert "npu devfreq fdab0000.npu 1000000000 -> 600000000 Hz" in reason
    assert "ddr devfreq dmc governor dmc_ondemand -> performance" in reason


def test_absent_readings_are_no_evidence() -> None:
    before, after = _reading(), _reading(khz=1416000)
    before["cpu"][0]["cur_freq_khz"] = None
    after["thermal"] = []  # zone not read after the runs
    assert noise_reason({"before": before, "after": after}) == ""
    assert noise_reason({}) == noise_reason({"before": _reading()}) == noise_reason(None) == ""
    # the simulated boards' state: everything absent
    empty = {"cpu": [], "npu": [], "ddr": [], "thermal": [], "loadavg": None}
    assert noise_reason({"before": empty, "after": copy.deepcopy(empty)}) == ""
