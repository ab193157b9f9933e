"""The ``perf`` marker: a test's own run count and latency thresholds (any ``_ms`` figure of
:class:`~npu_hil.harness.latency.Latency`); docs/model-developer/figures.md."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from npu_hil.harness.latency import Latency


MARKER = (
    "perf(runs=1, warmup=0, **thresholds_ms): time the runtime call `runs` times after `warmup` "
    "untimed runs; fail when a figure (p50_ms, p90_ms, p99_ms, max_ms, ...) exceeds its threshold"
)
THRESHOLDS = ("p50_ms", "p90_ms", "p99_ms", "min_ms", "max_ms", "mean_ms", "stdev_ms", "jitter_ms")


class LatencyExceeded(AssertionError):
    """A latency figure over the test's threshold: a failure of the test, not an error."""


@dataclass(frozen=True)
class PerfSpec:
    runs: int = 1
    warmup: int = 0
    thresholds_ms: dict[str, float] = field(default_factory=dict)
    pin_clocks: bool = False


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("npu-hil").addoption(
        "--pin-clocks",
        action="store_true",
        help="for perf tests, set the board's CPU, NPU and DDR governors to performance during "
        "the runs and restore them after",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)


def _count(value: object, name: str, low: int, high: int, where: str) -> int:
    from npu_hil.harness.errors import LayoutError

    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise LayoutError(
            f"{where}: perf({name}=...) expects an integer in [{low}, {high}], got {value!r}"
        )
    return value


def perf_spec(item: pytest.Item) -> PerfSpec | None:
    """The test's ``perf`` marker, checked (a bad one is a LayoutError naming the test)."""
    marker = item.get_closest_marker("perf")
    if marker is None:
        return None
    # Where a test has the marker: every run asks (the job's bounds, the harness's errors).
    from npu_hil.harness.board.job import MAX_RUNS, MAX_WARMUP
    from npu_hil.harness.errors import LayoutError

    where = item.nodeid
    if marker.args:
        raise LayoutError(f"{where}: perf() takes keyword arguments only, got {marker.args!r}")
    kwargs = dict(marker.kwargs)
    runs = _count(kwargs.pop("runs", 1), "runs", 1, MAX_RUNS, where)
    warmup = _count(kwargs.pop("warmup", 0), "warmup", 0, MAX_WARMUP, where)
    thresholds: dict[str, float] = {}
    for name, value in kwargs.items():
        if name not in THRESHOLDS:
            raise LayoutError(
                f"{where}: perf({name}=...) is not a figure; thresholds are {', '.join(THRESHOLDS)}"
            )
        if (
            not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise LayoutError(f"{where}: perf({name}={value!r}) expects milliseconds > 0")
        thresholds[name] = float(value)
    pin = bool(item.config.getoption("pin_clocks", False))
    return PerfSpec(runs, warmup, thresholds, pin)


def check_latency(latency: Latency | None, spec: PerfSpec, what: str) -> None:
    """Raise :class:`LatencyExceeded` naming every figure over its threshold."""
    if not spec.thresholds_ms:
        return
    if latency is None:
        raise LatencyExceeded(f"{what}: the board reported no per-run durations to check")
    figures = latency.to_dict()
    over = [
        f"{name} {float(figures[name]):.3f} ms > threshold {limit:g} ms"
        for name, limit in spec.thresholds_ms.items()
        if float(figures[name]) > limit
    ]
    if over:
        raise LatencyExceeded(
            f"{what}: latency over threshold: {'; '.join(over)} ({latency.summary()})"
        )
