"""The simulated runtime refuses what the device refuses, with the agent's error kinds/stages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from sim_helpers import inputs_for, packed_input, random_tensor

from npu_hil.harness.codec import get_layout
from npu_hil.harness.models import build, save
from npu_hil.harness.sim import SimInput, SimNpu, SimRefusal, SimRun


def check(exc: pytest.ExceptionInfo[SimRefusal], kind: str, stage: str) -> None:
    assert (exc.value.kind, exc.value.stage) == (kind, stage), exc.value.message


def run_once(
    target: str,
    model: onnx.ModelProto,
    given: dict[str, np.ndarray],
    layouts: dict[str, str] | None = None,
    **options: Any,
) -> SimRun:
    npu = SimNpu(target, **options)
    loaded = npu.load(model)
    layouts = layouts or {}
    return npu.run(loaded, [SimInput.logical(k, v, layouts.get(k, "")) for k, v in given.items()])


# ------------------------------------------------------------------ convolution width rules


@pytest.mark.parametrize(("width", "ok"), [(2389, True), (2390, False)])
def test_conv_width_rule_a_at_its_bound(width: int, ok: bool) -> None:
    # RK3566 rule A, 3x3: N = 8 - CEIL(9/128) = 7; (1) width * 3 < 1024 * 7 = 7168 (strict).
    # On a 1-channel input: the compiler's limit was measured on 3 channels, so the seed's
    # rule decides here (3 channels: test_a_measured_limit_decides_over_the_seeds_rule).
    model = build("conv3x3", (1, 1, 1, width))
    npu = SimNpu("rk3566")
    if ok:
        npu.load(model)
        return
    with pytest.raises(SimRefusal, match=r"conv_0 .*rule A.*7170 >= 1024·N = 1024·7 = 7168") as exc:
        npu.load(model)
    check(exc, "DeviceError", "load")


def test_a_measured_limit_decides_over_the_seeds_rule() -> None:
    # rknn-toolkit2 builds the first-layer 3x3 convolution on 3 channels at 2390 on RK3566
    # (tests/data/zoo/rknn_widths.json.gz), where the seed's rule A refuses it.
    SimNpu("rk3566").load(build("conv3x3", (1, 3, 1, 2390)))
    with pytest.raises(SimRefusal, match=r"conv_0 .*refuses widths 4096-16384") as exc:
        SimNpu("rk3562").load(build("conv3x3", (1, 3, 1, 4096)))
    check(exc, "DeviceError", "load")


def test_dilation_counts_and_depthwise_has_its_own_n() -> None:
    # Dilation 6 makes the 3x3 kernel 13x13: K = 169. Convolution N = 8 - CEIL(169/128) = 6:
    # 500 * 13 = 6500 >= 6144 fails; depthwise N = 8 - CEIL(169/4096) = 7: 6500 < 7168 holds.
    npu = SimNpu("rk3566")
    with pytest.raises(SimRefusal, match=r"dilated 13x13.*6500 >= 1024·N = 1024·6") as exc:
        npu.load(build("conv3x3", (1, 3, 1, 500), dilation=6))
    check(exc, "DeviceError", "load")
    npu.load(build("depthwise", (1, 3, 1, 500), dilation=6))
    with pytest.raises(SimRefusal, match="depthwise"):
        npu.load(build("depthwise", (1, 3, 1, 560), dilation=6))


def test_deconvolution_width_limit() -> None:
    # RK3588: (2) width <= 8192 for every kind.
    npu = SimNpu("rk3588")
    npu.load(build("deconv", (1, 3, 1, 8192)))
    with pytest.raises(SimRefusal, match=r"deconv_0 \(ConvTranspose.*\(2\) width = 8193 > 8192"):
        npu.load(build("deconv", (1, 3, 1, 8193)))


def test_the_width_rule_follows_the_input_table() -> None:
    # The rule applies for inputs of 1, 3 or 4 channels; the seed says "no limit" otherwise.
    npu = SimNpu("rk3566")
    with pytest.raises(SimRefusal, match=r"\(2\) width = 5000 > 4096"):
        npu.load(build("conv1x1", (1, 3, 1, 5000)))
    npu.load(build("conv1x1", (1, 8, 1, 5000)))
    # The seeds give the KL730 and Horizon no width limits.
    SimNpu("kl730").load(build("conv3x3", (1, 3, 1, 9000)))
    SimNpu("rdk-x5").load(build("conv3x3", (1, 3, 1, 9000)))


# ------------------------------------------------------------ combinations the tables lack


@pytest.mark.parametrize(
    ("target", "options", "match"),
    [
        ("rv1106", {"output_layout": "NCHW"}, "no output row"),
        ("rk2118", {"output_layout": "UNDEFINE"}, "no output row"),
        ("rv1103b", {"output_layout": "UNDEFINE"}, "no output row"),
        ("rk2118", {"precision": "int8"}, "no int8 first layer"),
        ("rv1106", {"precision": "float16"}, "no float16 first layer"),
        ("kl730", {"output_layout": "4W4C8B"}, "input-only format"),
    ],
)
def test_unlisted_combinations_are_refused_at_load(
    target: str, options: dict[str, Any], match: str
) -> None:
    npu = SimNpu(target, **options)
    with pytest.raises(SimRefusal, match=match) as exc:
        npu.load(build("conv1x1", (1, 3, 2, 5)))
    check(exc, "LayoutError", "load")


@pytest.mark.parametrize(
    ("target", "options"),
    [("rk3588", {"output_layout": "NCWH"}), ("kl730", {"output_layout": "16W16C"})],
)
def test_unknown_output_layouts_are_refused_at_init(target: str, options: dict[str, Any]) -> None:
    with pytest.raises(SimRefusal) as exc:
        SimNpu(target, **options)
    check(exc, "LayoutError", "init")


@pytest.mark.parametrize(
    ("target", "shape", "dtype", "layout", "match"),
    [
        ("rk3588", (1, 20, 2, 5), "float32", "", "C2 block is known for 8-bit and float16"),
        ("rv1106b", (1, 3, 2, 5), "float32", "", "no input row"),
        ("rk2118", (1, 3, 2, 5), "uint8", "", "no input row"),
        ("kl730", (1, 3, 2, 5), "uint8", "", "signed fixed point"),
        ("kl730", (1, 3, 2, 5), "int8", "4W4C9B", "not a native input layout"),
        ("rk3588", (1, 3, 2, 5), "uint8", "NCWH", "not a native input layout"),
        ("rdk-x3", (1, 3, 2, 5), "uint8", "NV21", "not a native input layout"),
        ("rdk-s100", (1, 3, 5, 8), "uint8", "NV12", "NV12 needs even H and W"),
        ("rdk-x5", (1, 3, 4, 8), "uint8", "Y", "a Y frame"),
    ],
)
def test_unlisted_inputs_are_refused_at_run(
    target: str, shape: tuple[int, ...], dtype: str, layout: str, match: str
) -> None:
    model = build("conv1x1", shape)
    if layout == "NV12":
        frame = random_tensor((1, shape[2] * 3 // 2, shape[3]), dtype)
    elif layout == "Y":
        frame = random_tensor((1, shape[2], shape[3]), dtype)
    else:
        frame = random_tensor(shape, dtype)
    with pytest.raises(SimRefusal, match=match) as exc:
        run_once(target, model, {"input": frame}, {"input": layout})
    check(exc, "LayoutError", "run")


# ------------------------------------------------------------------ CPU mean/scale (note 7)


@pytest.mark.parametrize("target", ["rv1103", "rv1106", "rv1103b"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_no_cpu_mean_scale_on_rv1103_rv1106_rv1103b(target: str, dtype: str) -> None:
    model = build("conv1x1", (1, 3, 2, 5))
    with pytest.raises(SimRefusal, match="note 7") as exc:
        run_once(target, model, inputs_for(model, dtype))
    check(exc, "DeviceError", "run")
    run_once(target, model, inputs_for(model, "uint8"))  # the NPU path works


# ------------------------------------------------------------------- Horizon buffer address


@pytest.mark.parametrize("target", ["rdk-x3", "rdk-x5", "rdk-s100"])
def test_horizon_refuses_unaligned_buffers(target: str) -> None:
    model = build("identity", (1, 3, 2, 5))
    given = inputs_for(model, "uint8")
    with pytest.raises(SimRefusal, match="4 bytes past a 32-byte boundary") as exc:
        run_once(target, model, given, buffer_offset=4)
    check(exc, "DeviceError", "run")
    with pytest.raises(SimRefusal, match="the output buffer of 'output'"):
        run_once(target, model, given, buffer_offsets={"output": 8})
    run_once(target, model, given, buffer_offset=64)  # 64 is on a boundary


def test_other_runtimes_take_unaligned_buffers() -> None:
    model = build("identity", (1, 3, 2, 5))
    run = run_once("rk3588", model, inputs_for(model, "uint8"), buffer_offset=4)
    assert run.outputs[0].data.ctypes.data % 32 == 4


# -------------------------------------------------------------------- requests and models


def test_pass_through_must_be_native_and_whole() -> None:
    model = build("conv1x1", (1, 3, 2, 5))
    npu = SimNpu("rk3588")
    loaded = npu.load(model)
    values = random_tensor((1, 3, 2, 5), "uint8")
    layout = get_layout("rk3588", "NHWC", (1, 3, 2, 5), "uint8", role="input")
    with pytest.raises(SimRefusal, match="native type INT8") as exc:
        npu.run(loaded, [packed_input("input", layout, values)])
    check(exc, "LayoutError", "run")
    int8 = get_layout("rk3588", "NHWC", (1, 3, 2, 5), "int8", role="input")
    packed = packed_input("input", int8, values.astype(np.int8))
    packed.data = packed.data[:-1]
    with pytest.raises(SimRefusal, match="must be 96 bytes"):
        npu.run(loaded, [packed])


def test_inputs_and_outputs_must_match_the_model() -> None:
    model = build("add_relu", (1, 3, 2, 5))
    npu = SimNpu("rk3588")
    loaded = npu.load(model)
    a = SimInput.logical("a", random_tensor((1, 3, 2, 5), "uint8"))
    with pytest.raises(SimRefusal, match="not set: b") as exc:
        npu.run(loaded, [a])
    check(exc, "LayoutError", "run")
    with pytest.raises(SimRefusal, match="unknown: c"):
        npu.run(loaded, [a, SimInput.logical("c", random_tensor((1, 3, 2, 5), "uint8"))])
    with pytest.raises(SimRefusal, match="given twice"):
        npu.run(loaded, [a, a])
    b = SimInput.logical("b", random_tensor((1, 3, 2, 6), "uint8"))
    with pytest.raises(SimRefusal, match=r"input is \[1, 3, 2, 5\], got \[1, 3, 2, 6\]"):
        npu.run(loaded, [a, b])
    b = SimInput.logical("b", random_tensor((1, 3, 2, 5), "uint8"))
    with pytest.raises(SimRefusal, match="no output logits"):
        npu.run(loaded, [a, b], outputs=["logits"])
    short = SimInput.logical("b", random_tensor((1, 3, 2, 5), "uint8"))
    short.data = short.data[:10]
    with pytest.raises(SimRefusal, match="needs 30 bytes, got 10"):
        npu.run(loaded, [a, short])


def test_models_the_sim_cannot_load(tmp_path: Path) -> None:
    npu = SimNpu("rk3588")
    with pytest.raises(SimRefusal, match="compiled artifacts") as exc:
        npu.load(tmp_path / "detector.rknn")
    check(exc, "UnsupportedError", "load")
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x08\x07garbage")
    with pytest.raises(SimRefusal) as exc:
        npu.load(broken)
    check(exc, "DeviceError", "load")
    with pytest.raises(SimRefusal, match="numpy path runs") as exc:
        SimNpu("rk3588", executor="numpy").load(build("conv3x3", (1, 3, 2, 5)))
    check(exc, "UnsupportedError", "load")
    path = save(build("identity", (1, 3, 2, 5)), tmp_path / "ok.onnx")
    assert npu.load(path).source == str(path)
