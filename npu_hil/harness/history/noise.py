"""Was a case's board steady while it was timed? The agent reads the board's state before and
after the timed runs (:func:`npu_hil.harness.board.boardstate.read_board_state`); a figure taken
while a thermal zone warmed or a clock or governor moved says more about the board than about the
runtime, so a baseline reports it as noisy instead of failing it.

Noisy when, between the two readings:

- any thermal zone moved by at least ``THERMAL_STEP_MC`` (5 °C), or
- any cpufreq policy's, or the NPU's or DDR's devfreq device's, frequency or governor changed.

A reading that is absent on either side (``None``, or a zone only one reading has) is no
evidence of a change: nothing is guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["THERMAL_STEP_MC", "noise_reason"]

THERMAL_STEP_MC = 5000  # millidegrees C


def _by(entries: Any, key: str) -> dict[str, Mapping[str, Any]]:
    if not isinstance(entries, list):
        return {}
    return {str(e[key]): e for e in entries if isinstance(e, Mapping) and e.get(key) is not None}


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _thermal(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    reasons = []
    was, now = _by(before.get("thermal"), "zone"), _by(after.get("thermal"), "zone")
    for zone in sorted(set(was) & set(now)):
        t0, t1 = _number(was[zone].get("temp_mc")), _number(now[zone].get("temp_mc"))
        if t0 is None or t1 is None or abs(t1 - t0) < THERMAL_STEP_MC:
            continue
        verb = "rose" if t1 > t0 else "fell"
        reasons.append(f"{zone} {verb} {abs(t1 - t0) / 1000:.1f} °C during the runs")
    return reasons


def _clocks(
    before: Mapping[str, Any], after: Mapping[str, Any], kind: str, key: str, freq: str
) -> list[str]:
    reasons = []
    label = "cpufreq" if kind == "cpu" else f"{kind} devfreq"
    unit = "kHz" if freq.endswith("khz") else "Hz"
    was, now = _by(before.get(kind), key), _by(after.get(kind), key)
    for name in sorted(set(was) & set(now)):
        g0, g1 = was[name].get("governor"), now[name].get("governor")
        if g0 is not None and g1 is not None and g0 != g1:
            reasons.append(f"{label} {name} governor {g0} -> {g1}")
        f0, f1 = _number(was[name].get(freq)), _number(now[name].get(freq))
        if f0 is not None and f1 is not None and f0 != f1:
            reasons.append(f"{label} {name} {f0} -> {f1} {unit}")
    return reasons


def noise_reason(board_state: Mapping[str, Any] | None) -> str:
    """Why the board's state moved during the timed runs, ``""`` when it did not (or when there
    are not two readings to compare), e.g. ``thermal_zone0 rose 7.0 °C during the runs;
    cpufreq policy0 1800000 -> 1416000 kHz``."""
    if not isinstance(board_state, Mapping):
        return ""
    before, after = board_state.get("before"), board_state.get("after")
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return ""
    reasons = _thermal(before, after)
    reasons += _clocks(before, after, "cpu", "policy", "cur_freq_khz")
    reasons += _clocks(before, after, "npu", "device", "cur_freq_hz")
    reasons += _clocks(before, after, "ddr", "device", "cur_freq_hz")
    return "; ".join(reasons)
