"""The sim's other native paths: image inputs, pass-through, 16-bit KL730 data, other RKNN
output layouts and precisions, Horizon SHIFT / F32 outputs, the numpy executor."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from sim_helpers import compare, inputs_for, packed_input, random_tensor, run_sim

from npu_hil.harness.codec import get_layout
from npu_hil.harness.models import build, reference_outputs
from npu_hil.harness.sim import SimInput, SimNpu, SimRun
from npu_hil.targets.horizon.quant import nv12_planes

HORIZON = ("rdk-x3", "rdk-x5", "rdk-s100")


def _all_equal(
    target: str, model: onnx.ModelProto, given: dict[str, np.ndarray], run: SimRun
) -> None:
    for item in compare(target, model, given, run):
        assert item.report.verdict == "equal", item.report.summary()


@pytest.mark.parametrize("target", HORIZON)
@pytest.mark.parametrize("batch", [1, 2])
def test_nv12_input(target: str, batch: int) -> None:
    model = build("conv1x1", (batch, 3, 6, 10), out_channels=4)
    frame = random_tensor((batch, 9, 10), "uint8", seed=1)
    run = run_sim(target, model, {"input": frame}, layouts={"input": "NV12"})
    held = run.inputs[0]
    assert held.layout == "NV12"
    assert held.attributes["tensorType"] == "NV12"
    assert held.attributes["validShape"] == [batch, 3, 6, 10]
    # No strides for NV12 model inputs: 0 on X3/X5 (their docs), -1 (dynamic) on S100.
    assert held.attributes["stride"] == [-1 if target == "rdk-s100" else 0] * 4
    assert held.attributes["alignedByteSize"] == batch * 9 * 32  # rows padded to 32 bytes
    assert ("alignedShape" in held.attributes) == (target != "rdk-s100")
    _all_equal(target, model, {"input": frame}, run)


@pytest.mark.parametrize("target", ["rdk-x3", "rdk-x5"])
def test_nv12_separate_input_in_two_memories(target: str) -> None:
    model = build("conv1x1", (1, 3, 6, 10), out_channels=4)
    frame = random_tensor((1, 9, 10), "uint8", seed=3)
    run = run_sim(target, model, {"input": frame}, layouts={"input": "NV12_SEPARATE"})
    held = run.inputs[0]
    assert held.layout == "NV12_SEPARATE"
    assert held.attributes["tensorType"] == "NV12_SEPARATE"
    assert held.attributes["memories"] == [6 * 32, 3 * 32]  # Y rows, then UV rows, 32 apart
    assert held.attributes["alignedShape"] == [1, 3, 6, 32]
    assert held.attributes["stride"] == [0, 0, 0, 0]
    _all_equal(target, model, {"input": frame}, run)
    # The same numbers as the one-memory NV12 input.
    nv12 = run_sim(target, model, {"input": frame}, layouts={"input": "NV12"})
    assert np.array_equal(nv12.outputs[0].data, run.outputs[0].data)


def test_nv12_separate_refusals() -> None:
    model = build("conv1x1", (1, 3, 6, 10), out_channels=4)
    frame = random_tensor((1, 9, 10), "uint8", seed=3)
    with pytest.raises(Exception, match="not a native input layout of rdk-s100"):
        run_sim("rdk-s100", model, {"input": frame}, layouts={"input": "NV12_SEPARATE"})
    batch = build("conv1x1", (2, 3, 6, 10), out_channels=4)
    frames = random_tensor((2, 9, 10), "uint8", seed=3)
    with pytest.raises(Exception, match="NV12_SEPARATE takes one image"):
        run_sim("rdk-x5", batch, {"input": frames}, layouts={"input": "NV12_SEPARATE"})


def test_nv12_planes_repeat_chroma() -> None:
    frame = np.arange(6 * 4, dtype=np.uint8).reshape(1, 6, 4)  # H = 4, W = 4
    planes = nv12_planes(frame)
    assert planes.shape == (1, 3, 4, 4)
    assert np.array_equal(planes[0, 0], frame[0, :4])
    assert planes[0, 1, 0, 0] == planes[0, 1, 1, 1] == frame[0, 4, 0]  # U of the top-left 2x2
    assert planes[0, 2, 3, 3] == frame[0, 5, 3]  # V of the bottom-right 2x2


@pytest.mark.parametrize("target", HORIZON)
def test_y_input_and_shift_outputs(target: str) -> None:
    model = build("conv3x3", (1, 1, 4, 9), out_channels=3)
    frame = random_tensor((1, 4, 9), "uint8", seed=2)
    run = run_sim(target, model, {"input": frame}, layouts={"input": "Y"}, output_quant="shift")
    attrs = run.outputs[0].attributes
    assert attrs["quantiType"] == "SHIFT" and len(attrs["shift"]) == 3 and attrs["scale"] == []
    _all_equal(target, model, {"input": frame}, run)


@pytest.mark.parametrize("target", HORIZON)
def test_float_outputs_without_quantization(target: str) -> None:
    model = build("deconv", (1, 2, 3, 5))
    given = inputs_for(model, "float32")
    run = run_sim(target, model, given, output_quant="none")
    assert run.outputs[0].attributes["tensorType"] == "F32"
    assert run.outputs[0].attributes["quantiType"] == "NONE"
    _all_equal(target, model, given, run)


@pytest.mark.parametrize(
    ("target", "layout", "dtype", "params"),
    [
        ("rk3588", "NC1HWC2", "int8", {"first_layer": "int8"}),
        ("rk3566", "NHWC", "int8", {"first_layer": "int8"}),
        ("rk2118", "NHWC", "float16", {}),
        ("kl730", "1W16C8B", "int8", {}),
        ("kl730", "16W1C8BHL", "int16", {}),
        ("rdk-x5", "strided", "uint8", {}),
    ],
)
def test_pass_through_bytes_are_held_as_given(
    target: str, layout: str, dtype: str, params: dict[str, str]
) -> None:
    shape = (1, 20, 3, 5) if layout == "NC1HWC2" else (1, 3, 3, 5)
    model = build("conv1x1", shape, out_channels=6)
    values = random_tensor(shape, dtype, seed=4)
    native = get_layout(target, layout, shape, dtype, role="input", **params)
    npu = SimNpu(target)
    run = npu.run(npu.load(model), [packed_input("input", native, values)])
    held = run.inputs[0]
    assert np.array_equal(held.data, native.pack(values))
    if "pass_through" in held.attributes:
        assert held.attributes["pass_through"] == 1
    _all_equal(target, model, {"input": values}, run)


@pytest.mark.parametrize("fmt", ["1W16C8BHL", "8W1C16B", "RAW_16B", "16W1C8BHL", "4W4C8BHL"])
def test_kl730_16_bit_outputs_keep_15_bits(fmt: str) -> None:
    # 4W4C8BHL addresses at most 4 channels (no channel group term in Kneron's reading).
    model = build("conv3x3", (1, 3, 5, 7), out_channels=4 if fmt == "4W4C8BHL" else 18)
    given = inputs_for(model, "float32", seed=6)
    run = run_sim("kl730", model, given, output_layout=fmt)
    out = run.outputs[0]
    assert out.dtype == "int16" and out.attributes["data_layout"] == fmt
    values = out.codec_layout.unpack(out.data)
    assert np.all(values % 2 == 0)  # bit 0 is dropped on the device
    _all_equal("kl730", model, given, run)


@pytest.mark.parametrize("fmt", ["4W4C8B", "HW4C8B_DROP_A", "HW1C8B", "RAW_8B", "16W1C8B"])
def test_kl730_declared_input_formats(fmt: str) -> None:
    model = build("identity", (1, 3, 4, 9))
    given = inputs_for(model, "int8", seed=7)
    run = run_sim("kl730", model, given, layouts={"input": fmt})
    assert run.inputs[0].attributes["data_layout"] == fmt
    _all_equal("kl730", model, given, run)


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW", "UNDEFINE"])
@pytest.mark.parametrize("target", ["rk3566", "rk3588", "rk3562"])
def test_rknn_other_output_layouts(target: str, fmt: str) -> None:
    model = build("conv1x1", (1, 3, 3, 5), out_channels=5)
    given = inputs_for(model, "uint8")
    run = run_sim(target, model, given, output_layout=fmt)
    assert run.outputs[0].attributes["fmt"] == ("UNDEFINED" if fmt == "UNDEFINE" else fmt)
    _all_equal(target, model, given, run)


@pytest.mark.parametrize("target", ["rk3566", "rv1106", "rk2118"])
def test_rknn_inputs_in_a_named_layout(target: str) -> None:
    # NC1HWC2 for a 3-channel input (the runtime's default would be NHWC); UNDEFINE: flat.
    dtype = "float16" if target == "rk2118" else "uint8"
    for layout in ("NC1HWC2", "UNDEFINE"):
        model = build("conv1x1", (1, 3, 2, 5))
        given = inputs_for(model, dtype)
        run = run_sim(target, model, given, layouts={"input": layout})
        assert run.inputs[0].layout == layout
        _all_equal(target, model, given, run)


@pytest.mark.parametrize("target", ["rk3566", "rk3588", "rk3562", "rk3576"])
def test_rknn_float16_models(target: str) -> None:
    model = build("depthwise", (1, 20, 3, 5))
    given = inputs_for(model, "float16", seed=8)
    run = run_sim(target, model, given, precision="float16")
    out = run.outputs[0]
    assert (out.attributes["type"], out.attributes["qnt_type"]) == ("FLOAT16", "NONE")
    _all_equal(target, model, given, run)


@pytest.mark.parametrize("model_name", ["identity", "conv1x1", "add_relu"])
def test_numpy_executor_matches_onnxruntime(model_name: str) -> None:
    model = build(model_name, (2, 3, 3, 7))
    given = inputs_for(model, "float32", seed=9)
    numpy_run = run_sim("rk3588", model, given, executor="numpy")
    ort_run = run_sim("rk3588", model, given, executor="onnxruntime")
    a, b = numpy_run.outputs[0], ort_run.outputs[0]
    # Float sums in another order may move a value across a rounding boundary: one unit at most.
    assert a.attributes["zp"] == b.attributes["zp"]
    diff = a.codec_layout.unpack(a.data).astype(int) - b.codec_layout.unpack(b.data).astype(int)
    assert np.abs(diff).max() <= 1
    floats = reference_outputs(model, given)["output"]
    from npu_hil.harness.sim import execute

    assert np.allclose(execute.run_numpy(model, given)["output"], floats, rtol=1e-5, atol=1e-5)


def test_outputs_can_be_selected_and_inputs_named_in_any_order() -> None:
    model = build("add_relu", (1, 3, 2, 5))
    given = inputs_for(model, "uint8")
    npu = SimNpu("rk3588")
    loaded = npu.load(model)
    run = npu.run(
        loaded,
        [SimInput.logical("b", given["b"]), SimInput.logical("a", given["a"])],
        outputs=["output"],
    )
    assert [t.name for t in run.inputs] == ["a", "b"]  # the model's order
    assert [t.attributes["index"] for t in run.inputs] == [0, 1]
    assert [t.name for t in run.outputs] == ["output"]
    assert run.timings["run_s"] >= 0 and run.timings["copy_s"] >= 0


def test_versions_name_the_runtime() -> None:
    versions = SimNpu("rdk-x5").versions()
    assert versions["target"] == "rdk-x5" and versions["vendor"] == "horizon"
    assert versions["executor"] in ("onnxruntime", "numpy")
