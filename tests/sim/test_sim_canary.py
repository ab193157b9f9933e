"""The simulated NPU and the canary: its buffers start the run holding the agent's pattern, it
writes over it what it writes, ``unwritten-output`` leaves part of it, and ``stale-output``
hands back the model's previous output bytes."""

from __future__ import annotations

import numpy as np
import pytest

from npu_hil.harness.board.job import canary_for
from npu_hil.harness.diff import diff_buffers
from npu_hil.harness.expect import expect_run
from npu_hil.harness.models import build
from npu_hil.harness.sim import SimConfigError, SimInput, SimNpu
from tests.sim.sim_helpers import inputs_for, native_dtype

PATTERN = canary_for("sim-canary")
MODEL = build("conv1x1", (1, 3, 3, 5), out_channels=40)


def run(npu: SimNpu, seed: int = 0, canary: bytes | None = PATTERN):  # type: ignore[no-untyped-def]
    given = inputs_for(MODEL, native_dtype(npu.target), seed=seed)
    loaded = npu.load(MODEL)
    result = npu.run(loaded, [SimInput.logical(n, v) for n, v in given.items()], canary=canary)
    return given, result


@pytest.mark.parametrize("target", ["rk3588", "kl730", "rdk-s100"])
def test_a_clean_run_writes_every_byte_over_the_canary(target: str) -> None:
    npu = SimNpu(target)
    given, result = run(npu)
    _, expected = expect_run(target, MODEL, given, result.inputs, result.outputs)
    (out,) = result.outputs
    assert (
        out.prior is not None
        and out.prior.tobytes()
        == np.resize(np.frombuffer(PATTERN, np.uint8), out.data.size).tobytes()
    )
    report = diff_buffers(expected[0].layout, expected[0].values, out.data, canary=PATTERN)
    assert report.verdict == "equal"


@pytest.mark.parametrize(
    ("params", "left"),
    [({}, None), ({"fraction": 0.5}, None), ({"drop": 100}, 100)],
)
def test_unwritten_output_leaves_the_tail_as_it_was(params: dict, left: int | None) -> None:
    npu = SimNpu("rk3588", faults=[{"name": "unwritten-output", **params}])
    given, result = run(npu)
    (out,) = result.outputs
    pattern = np.resize(np.frombuffer(PATTERN, np.uint8), out.data.size)
    # Where the trailing stretch that still holds the pattern starts.
    start = int(np.flatnonzero(out.data != pattern)[-1]) + 1
    if left is not None:
        assert out.data.size - start == left
    else:
        data_bytes = np.flatnonzero(~out.codec_layout.padding_mask())
        assert start <= data_bytes[-1]  # a fraction reaches data, not padding only
    _, expected = expect_run("rk3588", MODEL, given, result.inputs, result.outputs)
    report = diff_buffers(expected[0].layout, expected[0].values, out.data, canary=PATTERN)
    assert (
        report.verdict == "unwritten"
        and report.first_unwritten[-1].offset + report.first_unwritten[-1].count == out.data.size
    )


def test_unwritten_output_without_a_canary_leaves_zeros() -> None:
    npu = SimNpu("rk3588", faults=[{"name": "unwritten-output", "drop": 64}])
    _, result = run(npu, canary=None)
    assert not result.outputs[0].data[-64:].any()


def test_stale_output_returns_the_previous_run_of_the_model() -> None:
    npu = SimNpu("rk3588", faults=["stale-output"])
    clean = SimNpu("rk3588")
    _, first = run(npu, seed=1)
    _, fresh_first = run(clean, seed=1)
    assert first.outputs[0].data.tobytes() == fresh_first.outputs[0].data.tobytes()
    _, second = run(npu, seed=2)
    _, fresh_second = run(clean, seed=2)
    assert second.outputs[0].data.tobytes() == first.outputs[0].data.tobytes()
    assert fresh_second.outputs[0].data.tobytes() != first.outputs[0].data.tobytes()
    # The inputs are this run's: only the outputs are stale.
    assert second.inputs[0].data.tobytes() == fresh_second.inputs[0].data.tobytes()
    _, third = run(npu, seed=3)
    assert third.outputs[0].data.tobytes() == fresh_second.outputs[0].data.tobytes()


def test_stale_output_names_tensors_and_checks_its_parameters() -> None:
    npu = SimNpu("rk3588", faults=[{"name": "stale-output", "tensors": ["other"]}])
    _, first = run(npu, seed=1)
    _, second = run(npu, seed=2)
    assert second.outputs[0].data.tobytes() != first.outputs[0].data.tobytes()
    for bad in ({"fraction": 0}, {"fraction": 2}, {"drop": 0}, {"fraction": 0.5, "drop": 3}):
        with pytest.raises(SimConfigError):
            SimNpu("rk3588", faults=[{"name": "unwritten-output", **bad}])
    with pytest.raises(SimConfigError):
        SimNpu("rk3588", faults=[{"name": "stale-output", "drop": 3}])
