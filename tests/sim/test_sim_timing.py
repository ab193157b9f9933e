"""The simulated board's modeled device time: the cost model counts the graph's work, orders the
targets as their vendors rate them, spreads by at most 2 % deterministically, and is what the
runtime reports as its run time; the timing faults change that time and nothing else."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sim_helpers import inputs_for, native_dtype

from npu_hil.harness.models import build
from npu_hil.harness.sim import SIM_TARGETS, SimConfigError, SimInput, SimNpu, parse_faults
from npu_hil.harness.sim.faults import apply_timing_faults
from npu_hil.harness.sim.timing import (
    ELEMENT_OPS,
    OVERHEAD_S,
    SPREAD,
    Work,
    count_work,
    modeled_s,
    nominal_s,
    spread,
    throughput,
)


def test_the_work_of_a_convolution_is_its_macs() -> None:
    # 3x3 conv, 3 -> 16 channels, 8x8 "same": every output element takes 3·3·3 products
    work = count_work(build("conv3x3", (1, 3, 8, 8), out_channels=16))
    assert work.macs == 16 * 8 * 8 * 3 * 3 * 3
    assert count_work(build("conv1x1", (2, 3, 4, 5), out_channels=7)).macs == 2 * 7 * 4 * 5 * 3
    identity = count_work(build("identity", (1, 3, 4, 5)))
    assert identity == Work(macs=0, elements=60)
    assert identity.ops == ELEMENT_OPS * 60


def test_the_modeled_time_grows_with_the_work() -> None:
    times = [
        nominal_s(count_work(build("conv3x3", (1, 3, side, side), out_channels=16)), "rk3566")
        for side in (4, 8, 16, 32, 64)
    ]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert nominal_s(Work(), "rk3566") == pytest.approx(OVERHEAD_S)


def test_the_targets_are_ordered_as_their_vendors_rate_them() -> None:
    big = Work(macs=10**9)
    assert all(throughput(t).tops > 0 and throughput(t).source for t in SIM_TARGETS)
    # one model on an RK3588 gets one of its three 2-TOPS cores: faster than an RK3566 (0.8),
    # slower than an RDK X5 (10); an RDK S100 (80) is the fastest, the RK2118 the slowest
    order = ["rdk-s100", "rdk-x5", "rdk-x3", "kl730", "rk3588", "rk3568", "rk3566", "rv1103"]
    times = [nominal_s(big, t) for t in order]
    assert times == sorted(times)
    assert max(SIM_TARGETS, key=lambda t: nominal_s(big, t)) == "rk2118"
    # 6 TOPS over 3 cores against 6 over 2: the work takes 3/2 as long
    work_s = [nominal_s(big, t) - OVERHEAD_S for t in ("rk3588", "rk3576")]
    assert work_s[0] == pytest.approx(work_s[1] * 3 / 2)


@pytest.mark.slow
def test_the_spread_is_bounded_and_deterministic() -> None:
    factors = [spread(seed, index) for seed in (0, 1, 12345) for index in range(2000)]
    assert all(1 - SPREAD <= f <= 1 + SPREAD for f in factors)
    assert max(factors) - min(factors) > SPREAD  # it does spread
    assert abs(statistics.median(factors) - 1) < 0.003  # the median stays put
    assert spread(7, 3) == spread(7, 3) and spread(7, 3) != spread(7, 4) != spread(8, 4)
    work = Work(macs=10**6)
    assert modeled_s(work, "rk3588", 5) == modeled_s(work, "rk3588", 5)
    assert modeled_s(work, "rk3588", 5, seed=1) != modeled_s(work, "rk3588", 5, seed=2)


def _runs(target: str, count: int, **options: object) -> tuple[list[float], list[bytes]]:
    model = build("conv3x3", (1, 3, 8, 8), out_channels=16)
    npu = SimNpu(target, **options)
    loaded = npu.load(model)
    given = inputs_for(model, native_dtype(target), seed=3)
    inputs = [SimInput.logical(name, value) for name, value in given.items()]
    times, buffers = [], []
    for _ in range(count):
        run = npu.run(loaded, inputs)
        times.append(run.timings["run_s"])
        buffers.append(b"".join(t.data.tobytes() for t in run.outputs))
        assert run.timings["host_s"] > 0  # the host's wall time, kept beside
    return times, buffers


def test_the_runtime_reports_the_modeled_time_not_the_host_time() -> None:
    times, _ = _runs("rk3588", 5)
    work = count_work(build("conv3x3", (1, 3, 8, 8), out_channels=16))
    assert times == [modeled_s(work, "rk3588", i) for i in range(5)]
    again, _ = _runs("rk3588", 5)
    assert again == times  # a fresh board repeats its figures


@pytest.mark.parametrize(
    ("fault", "check"),
    [
        ({"name": "slow", "percent": 20}, lambda a, b: b == pytest.approx(a * 1.2)),
        ({"name": "slow", "percent": 250}, lambda a, b: b == pytest.approx(a * 3.5)),
        ({"name": "noisy-latency", "percent": 50, "seed": 4}, lambda a, b: 0.5 * a <= b <= 1.5 * a),
    ],
)
def test_a_timing_fault_changes_the_time_and_no_buffer(
    fault: dict[str, Any], check: Callable[[float, float], bool]
) -> None:
    clean_times, clean_buffers = _runs("rk3566", 10)
    times, buffers = _runs("rk3566", 10, faults=[fault])
    assert buffers == clean_buffers
    assert all(check(a, b) for a, b in zip(clean_times, times, strict=True))


@pytest.mark.slow
def test_noise_never_makes_a_run_take_no_time() -> None:
    faults = parse_faults([{"name": "noisy-latency", "percent": 5000, "seed": 1}])
    times = [apply_timing_faults(faults, 1.0, i) for i in range(500)]
    assert min(times) >= 0.01 and max(times) > 10
    assert len(set(times)) == 500  # every run differs, none stuck at the floor
    assert times == [apply_timing_faults(faults, 1.0, i) for i in range(500)]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"name": "slow", "percent": 0}, "percent must be a number in (0, 10000]"),
        ({"name": "slow", "percent": 10001}, "percent must be"),
        ({"name": "slow", "percent": True}, "percent must be"),
        ({"name": "slow", "seed": 1}, "unknown parameter(s) seed; accepted: percent"),
        ({"name": "noisy-latency", "percent": -5}, "percent must be"),
        ({"name": "noisy-latency", "seed": 1.5}, "seed must be an integer"),
        ({"name": "accuracy-drift", "lsb": 0}, "lsb must be an integer >= 1"),
        ({"name": "accuracy-drift", "lsb": 1.0}, "lsb must be"),
        ({"name": "accuracy-drift", "fraction": 0}, "fraction must be a number in (0, 1]"),
        ({"name": "accuracy-drift", "fraction": 1.5}, "fraction must be"),
        ({"name": "accuracy-drift", "percent": 3}, "unknown parameter(s) percent"),
    ],
)
def test_bad_timing_and_drift_parameters_are_refused(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(SimConfigError) as refused:
        parse_faults([spec])
    assert message in refused.value.message


def test_drift_moves_the_chosen_share_by_one_unit_and_leaves_padding() -> None:
    model = build("conv1x1", (1, 3, 3, 5), out_channels=40)  # NC1HWC2: C2 padding on rk3588
    given = {"input": np.random.default_rng(2).integers(0, 255, (1, 3, 3, 5)).astype(np.uint8)}
    inputs = [SimInput.logical("input", given["input"])]
    clean = SimNpu("rk3588").load(model)
    base = SimNpu("rk3588").run(clean, inputs).outputs[0]
    npu = SimNpu("rk3588", faults=[{"name": "accuracy-drift", "fraction": 0.25, "seed": 9}])
    drifted = npu.run(npu.load(model), inputs).outputs[0]
    layout = base.codec_layout
    padding = layout.padding_mask()
    assert padding.any()
    assert np.array_equal(drifted.data[padding], base.data[padding])
    before = layout.unpack(base.data).astype(np.int64)
    after = layout.unpack(drifted.data).astype(np.int64)
    moved = before != after
    assert np.all(np.abs(after - before) <= 1)
    assert moved.sum() == round(0.25 * before.size)
    info = np.iinfo(layout.dtype)
    assert after.min() >= info.min and after.max() <= info.max
    again = npu.run(npu.load(model), inputs).outputs[0]
    assert np.array_equal(again.data, drifted.data)  # the same drift on every run
