"""Each fault a simulated board injects is caught by the diff (or, for hang and crash, by the
process never answering); a fault is data; a fault that cannot apply is an error, not a no-op."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sim_helpers import Compared, compare, inputs_for, kinds, native_dtype, run_sim

from npu_hil.harness.models import build
from npu_hil.harness.sim import FAULT_NAMES, Fault, SimConfigError, SimInput, SimNpu, parse_faults

ROOT = Path(__file__).resolve().parents[2]
# The faults by where they act: in the buffers a run hands back, in the board's memory of
# earlier runs, in what the model reads of its inputs.
BUFFER_FAULTS = (
    "wrong-alignment",
    "swapped-channel-groups",
    "byte-swap",
    "dirty-padding",
    "truncated-output",
    "garbage",
    "unwritten-output",
)
STATE_FAULTS = ("stale-output",)
INPUT_FAULTS = ("unaligned-width",)

# (target, model, input shape, model options, sim options): outputs with channel blocks of
# 16 (RKNN C2, KL730 groups), 8 (RK3566 C2), none (Horizon), 16-bit HL planes.
Case = tuple[str, str, tuple[int, ...], dict[str, Any], dict[str, Any]]
CASES: list[Case] = [
    ("rk3588", "conv1x1", (1, 3, 3, 5), {"out_channels": 40}, {}),
    ("rk3566", "conv3x3", (2, 3, 3, 5), {"out_channels": 20}, {}),
    ("rv1106b", "conv1x1", (1, 3, 4, 5), {"out_channels": 17}, {}),
    ("kl730", "conv1x1", (1, 3, 3, 5), {"out_channels": 40}, {}),
    ("kl730", "conv1x1", (1, 3, 3, 5), {"out_channels": 36}, {"output_layout": "1W16C8BHL"}),
    ("rdk-s100", "conv1x1", (1, 3, 3, 7), {"out_channels": 5}, {}),
    ("rdk-x5", "deconv", (1, 3, 3, 7), {"out_channels": 4}, {}),
]
IDS = [f"{c[0]}-{c[1]}-{c[4].get('output_layout', 'default')}" for c in CASES]

NAMED = {
    "byte-swap": {"byte-swap"},
    "dirty-padding": {"dirty-padding"},
    "truncated-output": {"truncated"},
    "swapped-channel-groups": {"channel-groups-swapped", "channels-swapped"},
}
"""The finding each fault must produce (the others only have to make the verdict 'different')."""


def faulty_run(case: Case, fault: dict[str, Any]) -> list[Compared]:
    target, name, shape, model_options, options = case
    model = build(name, shape, **model_options)
    given = inputs_for(model, native_dtype(target), seed=11)
    run = run_sim(target, model, given, faults=[fault], **options)
    return compare(target, model, given, run)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fault_free_baseline(case: Case) -> None:
    target, name, shape, model_options, options = case
    model = build(name, shape, **model_options)
    given = inputs_for(model, native_dtype(target), seed=11)
    for item in compare(target, model, given, run_sim(target, model, given, **options)):
        assert item.report.verdict == "equal", item.report.summary()


@pytest.mark.parametrize("fault", BUFFER_FAULTS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_output_fault_is_detected(case: Case, fault: str) -> None:
    compared = faulty_run(case, {"name": fault})
    inputs = [c for c in compared if c.expected.role == "input"]
    outputs = [c for c in compared if c.expected.role == "output"]
    assert all(c.report.ok for c in inputs), "an output fault must leave the inputs alone"
    for item in outputs:
        report = item.report
        assert not report.ok, f"{fault} went unnoticed:\n{report.summary()}"
        assert report.findings or report.mismatched, report.summary()
        if fault in NAMED:
            assert kinds(report) & NAMED[fault], report.summary()


def test_swapped_groups_are_named_with_their_numbers() -> None:
    case: Case = ("rk3588", "conv1x1", (1, 3, 3, 5), {"out_channels": 48}, {})
    compared = faulty_run(case, {"name": "swapped-channel-groups", "groups": [0, 2]})
    report = compared[-1].report
    assert report.per_group.keys() == {0, 2}
    message = next(f.message for f in report.findings if f.kind == "channel-groups-swapped")
    assert "channel groups 0 and 2 are swapped" in message


def test_wrong_alignment_is_recognised_by_forensics() -> None:
    """RK3588 NC1HWC2 written with C2 = 8 instead of 16: the diff says which layout it is."""
    compared = faulty_run(CASES[0], {"name": "wrong-alignment"})
    report = compared[-1].report
    layout_findings = [f.message for f in report.findings if f.kind == "layout"]
    assert layout_findings and "c2=8" in layout_findings[0], report.summary()


def test_explicit_layout_params_for_wrong_alignment() -> None:
    case: Case = ("rk3566", "identity", (1, 3, 5, 13), {}, {})
    fault = {
        "name": "wrong-alignment",
        "applies_to": "inputs",
        "layout_params": {"w_stride": 24},
    }
    compared = faulty_run(case, fault)
    held = compared[0]
    assert held.device.data.size == 5 * 24 * 3  # rows of 24 pixels, not the table's 16
    assert not held.report.ok and held.report.length_delta == 5 * (24 - 16) * 3
    assert compared[1].report.ok  # the model still ran on the right data


@pytest.mark.parametrize("fault", BUFFER_FAULTS)
@pytest.mark.parametrize("target", ["rk3566", "kl730", "rdk-x3"])
def test_each_fault_on_device_inputs_is_detected(target: str, fault: str) -> None:
    """Faults on the input buffers as the runtime holds them: the input diff catches them."""
    case: Case = (target, "conv1x1", (1, 36, 3, 5), {"out_channels": 4}, {})
    compared = faulty_run(case, {"name": fault, "applies_to": "inputs"})
    held, outputs = compared[0], compared[1:]
    assert not held.report.ok, held.report.summary()
    if fault in NAMED:
        assert kinds(held.report) & NAMED[fault], held.report.summary()
    assert all(c.report.ok for c in outputs)


def test_single_channels_swap_when_there_are_not_two_whole_groups() -> None:
    # KL730 1W16C8B with 20 channels has one whole group: channels 0 and 1 are swapped instead.
    case: Case = ("kl730", "conv1x1", (1, 3, 3, 5), {"out_channels": 20}, {})
    report = faulty_run(case, {"name": "swapped-channel-groups"})[-1].report
    assert not report.ok and set(report.per_channel) == {0, 1}


def test_faults_select_tensors_by_name() -> None:
    model = build("add_relu", (1, 3, 2, 5))
    given = inputs_for(model, "uint8")
    fault = {"name": "garbage", "applies_to": "inputs", "tensors": ["b"]}
    run = run_sim("rk3588", model, given, faults=[fault])
    verdicts = {c.device.name: c.report.ok for c in compare("rk3588", model, given, run)}
    assert verdicts == {"a": True, "b": False, "output": True}


def test_faults_compose_in_order() -> None:
    case = CASES[0]
    model = build(case[1], case[2], **case[3])
    given = inputs_for(model, "uint8", seed=11)
    faults = ["dirty-padding", {"name": "swapped-channel-groups"}, {"name": "truncated-output"}]
    run = run_sim("rk3588", model, given, faults=faults)
    report = compare("rk3588", model, given, run)[-1].report
    assert {"dirty-padding", "truncated"} <= kinds(report)


def test_a_fault_that_applies_to_nothing_is_an_error() -> None:
    # RDK X5: W = 32 and even H leave no padding to dirty.
    model = build("identity", (1, 2, 2, 32))
    given = inputs_for(model, "uint8")
    with pytest.raises(SimConfigError, match="dirty-padding applies to no tensor"):
        run_sim("rdk-x5", model, given, faults=["dirty-padding"])
    with pytest.raises(SimConfigError, match="no outputs tensor named"):
        run_sim("rdk-x5", model, given, faults=[{"name": "garbage", "tensors": ["nope"]}])


# ---------------------------------------------------------------------------- as data


def test_faults_are_data() -> None:
    specs = ["byte-swap", {"name": "dirty-padding", "value": 7}, {"name": "hang", "params": {}}]
    faults = parse_faults(specs)
    assert [f.name for f in faults] == ["byte-swap", "dirty-padding", "hang"]
    assert faults[1].to_dict() == {"name": "dirty-padding", "value": 7}
    assert parse_faults([f.to_dict() for f in faults]) == faults
    assert json.loads(json.dumps([f.to_dict() for f in faults]))
    assert parse_faults(None) == () and parse_faults("crash") == (Fault("crash"),)
    assert set(FAULT_NAMES) == {
        *BUFFER_FAULTS,
        *STATE_FAULTS,
        *INPUT_FAULTS,
        "hang",
        "crash",
        "slow",
        "noisy-latency",
        "accuracy-drift",
        "leak",
        "flaky-errors",
        "npu-timeout",
        "oom-kill",
        "bad-model-version",
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("melt", "unknown fault 'melt'"),
        ({"name": "byte-swap", "width": 4}, "unknown parameter"),
        ({"name": "dirty-padding", "value": 0}, "value must be"),
        ({"name": "swapped-channel-groups", "groups": [1, 1]}, "two different group numbers"),
        ({"name": "garbage", "applies_to": "weights"}, "applies_to must be"),
        ({"name": "garbage", "tensors": "output"}, "a list of tensor names"),
        ({"name": "hang", "seconds": -1}, "seconds"),
        ({"name": "crash", "signal": "SIGNOPE"}, "signal name"),
        ({"name": "crash", "exit_code": 300}, "exit_code"),
        (42, "a fault is a name or a mapping"),
    ],
)
def test_bad_faults_are_refused(spec: object, message: str) -> None:
    with pytest.raises(SimConfigError, match=message):
        parse_faults([spec])


# ------------------------------------------------------------------------ hang / crash


@pytest.mark.slow
def test_hang_for_a_while_delays_the_answer() -> None:
    npu = SimNpu("rk3588", faults=[{"name": "hang", "seconds": 0.2}])
    model = npu.load(build("identity", (1, 3, 2, 3)))
    started = time.perf_counter()
    npu.run(model, [SimInput.logical("input", np.zeros((1, 3, 2, 3), np.uint8))])
    assert time.perf_counter() - started >= 0.2


SCRIPT = """
import json, sys
import numpy as np
from npu_hil.harness.models import build
from npu_hil.harness.sim import SimInput, SimNpu
npu = SimNpu("rk3588", faults=[json.loads(sys.argv[1])])
model = npu.load(build("identity", (1, 3, 2, 3)))
print("running", flush=True)
npu.run(model, [SimInput.logical("input", np.zeros((1, 3, 2, 3), np.uint8))])
print("returned", flush=True)
"""


def _board(fault: dict[str, Any]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, json.dumps(fault)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_hang_never_returns() -> None:
    board = _board({"name": "hang"})
    try:
        assert board.stdout is not None
        assert board.stdout.readline().strip() == "running"
        with pytest.raises(subprocess.TimeoutExpired):
            board.wait(timeout=1.0)
    finally:
        board.kill()
        board.wait()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGSEGV") or os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize(
    ("fault", "status"),
    [({"name": "crash"}, -signal.SIGSEGV), ({"name": "crash", "exit_code": 3}, 3)],
)
def test_crash_kills_the_process(fault: dict[str, Any], status: int) -> None:
    board = _board(fault)
    out, _ = board.communicate(timeout=60)
    assert "running" in out and "returned" not in out
    assert board.returncode == status
