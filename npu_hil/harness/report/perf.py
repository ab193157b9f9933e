"""A record's ``latency`` (:class:`~npu_hil.harness.latency.Latency`'s figures) and
``board_state`` (the agent's readings around the timed runs) as JUnit properties and page lines."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from npu_hil.harness.report.records import TestRecord

# A board state reading's clocks: (list, its entries' key, their frequency's field)
CLOCKS = (
    ("cpu", "policy", "cur_freq_khz"),
    ("npu", "device", "cur_freq_hz"),
    ("ddr", "device", "cur_freq_hz"),
)
FIGURES = ("p50_ms", "p90_ms", "p99_ms", "min_ms", "max_ms", "mean_ms", "stdev_ms", "jitter_ms")


def latency_properties(latency: Mapping[str, Any]) -> dict[str, str]:
    """``latency.p50_ms`` ... ``latency.runs``, ``latency.source``: strings, as JUnit has them."""
    if not latency:
        return {}
    props = {f"latency.{k}": f"{float(latency[k]):.6f}" for k in FIGURES if k in latency}
    for key in ("runs", "warmup", "source"):
        if key in latency:
            props[f"latency.{key}"] = str(latency[key])
    return props


def _value(value: Any) -> str:
    return "absent" if value is None else str(value)


def board_state_properties(state: Mapping[str, Any]) -> dict[str, str]:
    """``board_state.<before|after>.cpu.<policy>.governor`` / ``.cur_freq_khz``,
    ``...npu.<device>.*``, ``...ddr.<device>.*``, ``...thermal.<zone>.temp_mc`` (with its type),
    ``...loadavg``; a reading that was absent says ``absent``."""
    props: dict[str, str] = {}
    for phase in ("before", "after"):
        reading = state.get(phase)
        if not isinstance(reading, Mapping):
            continue
        head = f"board_state.{phase}"
        for kind, key, freq in CLOCKS:
            for entry in reading.get(kind) or []:
                name = f"{head}.{kind}.{entry.get(key)}"
                props[f"{name}.governor"] = _value(entry.get("governor"))
                props[f"{name}.{freq}"] = _value(entry.get(freq))
        for entry in reading.get("thermal") or []:
            name = f"{head}.thermal.{entry.get('zone')}"
            props[f"{name}.type"] = _value(entry.get("type"))
            props[f"{name}.temp_mc"] = _value(entry.get("temp_mc"))
        loads = reading.get("loadavg")
        props[f"{head}.loadavg"] = "absent" if loads is None else " ".join(str(v) for v in loads)
        absent = reading.get("absent") or []
        if absent:
            props[f"{head}.absent"] = " ".join(str(p) for p in absent)
    return props


def _temps(reading: Any) -> str:
    if not isinstance(reading, Mapping):
        return ""
    temps = [
        f"{t.get('type') or t.get('zone')} {t['temp_mc'] / 1000:.1f}°C"
        for t in reading.get("thermal") or []
        if isinstance(t.get("temp_mc"), int)
    ]
    return ", ".join(temps[:4])


def latency_html(record: TestRecord) -> str:
    """One line under the case: the figures, and the board state folded beneath."""
    lat = record.latency
    if not lat:
        return ""
    line = (
        f"latency ({lat.get('runs')} runs, {lat.get('warmup')} warm-up, {lat.get('source')}): "
        f"p50 {lat.get('p50_ms', 0):.3f} ms · p90 {lat.get('p90_ms', 0):.3f} · "
        f"p99 {lat.get('p99_ms', 0):.3f} · min {lat.get('min_ms', 0):.3f} · "
        f"max {lat.get('max_ms', 0):.3f} · jitter (p99-p50) {lat.get('jitter_ms', 0):.3f} ms"
    )
    state = record.board_state
    temps = " → ".join(t for t in (_temps(state.get("before")), _temps(state.get("after"))) if t)
    if temps:
        line += f" · {temps}"
    props = board_state_properties(state)
    folded = ""
    if props:
        text = "\n".join(f"{k} = {v}" for k, v in props.items())
        folded = f"<details><summary>board state</summary><pre>{escape(text)}</pre></details>"
    return f'<div class="latency">{escape(line)}</div>{folded}'
