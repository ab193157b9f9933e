"""Every target x every reference model x odd shapes: a fault-free simulated run diffs equal
against the host's expectation (reference outputs quantized on the host with the reported
parameters), device input buffers included; the reported attributes agree with the codec's
predictions and the quantization parameters are the ones the host picks from the data range."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sim_helpers import FLOAT_INPUT_TARGETS, compare, inputs_for, native_dtype, run_sim

from npu_hil.harness.codec.reported import predicted_layout
from npu_hil.harness.diff.attributes import diff_attributes, disagreements
from npu_hil.harness.expect import npu_outputs, semantics
from npu_hil.harness.models import MODELS, build
from npu_hil.harness.sim import SIM_TARGETS
from npu_hil.targets.quant import choose_affine, choose_fixed_point, choose_horizon_scale

SHAPES = [(1, 3, 5, 7), (2, 20, 3, 5), (1, 1, 4, 9)]


def _predicted_params(target: str, role: str, last_op: str) -> dict[str, str]:
    rockchip = target not in ("kl730",) and not target.startswith("rdk-")
    return {"last_op": last_op} if rockchip and role == "output" else {}


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("model_name", list(MODELS))
@pytest.mark.parametrize("target", SIM_TARGETS)
def test_fault_free_run_diffs_equal(target: str, model_name: str, shape: tuple[int, ...]) -> None:
    model = build(model_name, shape)
    given = inputs_for(model, native_dtype(target), seed=len(model_name))
    run = run_sim(target, model, given)
    compared = compare(target, model, given, run)
    assert len(compared) == len(run.inputs) + len(run.outputs) >= 2
    for item in compared:
        assert item.report.verdict == "equal", item.report.summary()
        attrs = item.device.attributes
        json.dumps(attrs)  # attributes travel in result.json
        last_op = "conv" if model_name not in ("identity", "add_relu") else "other"
        params = _predicted_params(target, item.device.role, last_op)
        predicted = predicted_layout(
            target, item.device.role, attrs, shape=item.device.shape, **params
        )
        assert not disagreements(diff_attributes(predicted, attrs))
        assert item.expected.layout.nbytes == item.device.data.size


@pytest.mark.parametrize("target", FLOAT_INPUT_TARGETS)
def test_float_inputs_are_converted_as_the_runtime_does(target: str) -> None:
    model = build("conv3x3", (1, 3, 5, 7), out_channels=6)
    given = inputs_for(model, "float32", seed=3)
    run = run_sim(target, model, given)
    for item in compare(target, model, given, run):
        assert item.report.verdict == "equal", item.report.summary()
    held = run.inputs[0]
    assert held.dtype == ("int8" if target == "kl730" else "float32")


@pytest.mark.parametrize("target", SIM_TARGETS)
def test_reported_quantization_is_the_hosts_choice(target: str) -> None:
    """The parameters the device reports are the ones the documented rule picks on the host."""
    model = build("conv1x1", (1, 5, 3, 7), out_channels=9)
    given = inputs_for(model, native_dtype(target), seed=5)
    run = run_sim(target, model, given)
    inputs = [c.expected for c in compare(target, model, given, run) if c.expected.role == "input"]
    # The output as the target's NPU computes it (int8 or float16 through the graph).
    reference = npu_outputs(target, model, inputs)[1]["output"].astype(np.float32)
    attrs = run.outputs[0].attributes
    if target == "kl730":
        chosen = choose_fixed_point(reference, "int8")
        assert (attrs["radix"], attrs["scale"]) == (list(chosen.radix), list(chosen.scale))
    elif target.startswith("rdk-"):
        scale = choose_horizon_scale(reference, axis=1)
        assert attrs["quantiType"] == "SCALE" and attrs["scale"] == list(scale.scale)
        assert attrs["quantizeAxis"] == 1 and attrs["zeroPoint"] == [0] * 9
    elif target == "rk2118":
        assert (attrs["type"], attrs["qnt_type"]) == ("FLOAT16", "NONE")
    else:
        affine = choose_affine(reference)
        assert (attrs["zp"], attrs["scale"]) == (affine.zero_point, affine.scale)
        assert attrs["qnt_type"] == "AFFINE_ASYMMETRIC"
    # The device's numbers decode to the reference within one quantized unit.
    quant = semantics(target).output_quantizer(attrs)
    held = run.outputs[0].codec_layout.unpack(run.outputs[0].data)
    error = np.abs(quant.dequantize(held) - reference)
    step = np.broadcast_to(quant.step(reference.ndim), reference.shape)
    assert np.all(error <= np.maximum(step, 1e-3) + 1e-9)
