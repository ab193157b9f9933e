"""Preflight: convolution width rules at each bound, input and output tables, the CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from npu_hil.harness.models import build  # noqa: E402
from npu_hil.harness.preflight import PreflightError, preflight  # noqa: E402
from tests.clirun import run_cli  # noqa: E402


def conv_model(
    width: int,
    *,
    kernel: int = 3,
    dilation: int = 1,
    channels: int = 3,
    out_channels: int = 8,
    group: int = 1,
    transpose: bool = False,
    input_type: int = TensorProto.UINT8,
    name: str = "conv_17",
) -> onnx.ModelProto:
    """Input (1, C, 4, width) → Cast → one Conv/ConvTranspose named ``name``."""
    weight_shape = (
        [channels, out_channels // group, kernel, kernel]
        if transpose
        else [out_channels, channels // group, kernel, kernel]
    )
    weight = helper.make_tensor(
        "w", TensorProto.FLOAT, weight_shape, np.zeros(int(np.prod(weight_shape)), np.float32)
    )
    nodes = [
        helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
        helper.make_node(
            "ConvTranspose" if transpose else "Conv",
            ["xf", "w"],
            ["y"],
            name=name,
            kernel_shape=[kernel, kernel],
            dilations=[dilation, dilation],
            group=group,
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", input_type, [1, channels, 4, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_the_users_example_width_6145_on_rk3588() -> None:
    report = preflight(conv_model(6145), "rk3588")
    assert not report.ok
    (violation,) = report.violations
    assert violation.node == "conv_17"
    assert violation.message == (
        "conv_17: (1) width·dkh = 6145·3 = 18435 > 2048·N = 2048·9 = 18432, rule A(1), rk3588"
    )
    assert preflight(conv_model(6144), "rk3588").ok


@pytest.mark.parametrize(
    ("target", "last_ok", "kernel", "dilation"),
    [
        # RV1106 rule A conv: N = 8 - MAX(CEIL(9/128), 2) = 6; width*3 <= 2048*6 -> 4096 (2).
        ("rv1106", 4096, 3, 1),
        # RK3566 rule A: width*3 < 1024*7 = 7168 -> 2389 is the last (strict <).
        ("rk3566", 2389, 3, 1),
        # dilated: kernel 3, dilation 2 -> 5x5, K = 25, N = 8 - 1 = 7; width*5 < 7168 -> 1433.
        ("rk3566", 1433, 3, 2),
    ],
)
def test_conv_bounds(target: str, last_ok: int, kernel: int, dilation: int) -> None:
    assert preflight(conv_model(last_ok, kernel=kernel, dilation=dilation), target).ok
    report = preflight(conv_model(last_ok + 1, kernel=kernel, dilation=dilation), target)
    assert not report.ok
    assert target in report.violations[0].message


def test_depthwise_and_deconv_kinds() -> None:
    depthwise = preflight(conv_model(4096, channels=4, out_channels=4, group=4), "rk3566")
    assert any("depthwise" in f.message for f in depthwise.findings)
    deconv = preflight(conv_model(100, transpose=True, out_channels=3), "rk3588")
    assert any("deconv" in f.message for f in deconv.findings)


def test_other_channel_counts_have_no_width_limit() -> None:
    report = preflight(conv_model(9000, channels=5, out_channels=5), "rk3588")
    assert report.ok
    assert any("no convolution width limit" in n for n in report.notes)


def test_input_type_missing_from_the_table() -> None:
    # Deployed as float16 (the vendor's compiler would make it int8 unless told otherwise).
    report = preflight(
        conv_model(16, input_type=TensorProto.FLOAT16), "rv1106", input_type="float16"
    )
    assert not report.ok
    assert "no input row" in report.violations[0].message


def test_a_float_onnx_input_takes_the_type_the_vendors_compiler_gives_it() -> None:
    # rknn-toolkit2 2.5.0 quantizes the first layer: a float32 input is deployed as int8, which
    # RV1106 takes (deviation int8-default-input), so the width rule applies and is checked.
    report = preflight(conv_model(16, input_type=TensorProto.FLOAT), "rv1106")
    assert report.ok, report.summary()
    assert "int8 (ONNX float32)" in report.findings[0].message
    assert "uint8 row" in report.findings[0].message
    assert not any("no model input has 1, 3 or 4 channels" in n for n in report.notes)
    wide = preflight(conv_model(4097, input_type=TensorProto.FLOAT), "rv1106")
    assert not wide.ok and "rule A" in wide.violations[0].message
    declared = preflight(conv_model(16, input_type=TensorProto.FLOAT), "rv1106", input_type="uint8")
    assert declared.ok and "x: uint8 (ONNX float32)" in declared.findings[0].message


def test_an_unknown_rockchip_input_type_is_a_preflight_error() -> None:
    with pytest.raises(PreflightError, match="--input-type: expected one of uint8"):
        preflight(conv_model(16), "rk3588", input_type="nv12")


def test_kl730_and_horizon_have_no_width_limit_but_nv12_needs_even_sizes() -> None:
    assert preflight(conv_model(9000), "kl730").ok
    odd = conv_model(15)
    report = preflight(odd, "rdk-x5", input_type="nv12")
    assert not report.ok
    assert "must be even" in report.violations[0].message


def test_unreadable_model_is_a_preflight_error(tmp_path: Path) -> None:
    (tmp_path / "bad.onnx").write_bytes(b"not onnx")
    with pytest.raises(PreflightError, match=r"bad\.onnx"):
        preflight(tmp_path / "bad.onnx", "rk3588")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``npu-hil preflight ARGS`` in this process (tests/clirun.py)."""
    return run_cli("preflight", *args)


@pytest.mark.slow
def test_cli_exit_codes(tmp_path: Path) -> None:
    onnx.save(conv_model(6145), str(tmp_path / "wide.onnx"))
    onnx.save(conv_model(100), str(tmp_path / "fine.onnx"))
    assert cli("--target", "rk3588", str(tmp_path / "fine.onnx")).returncode == 0
    wide = cli("--target", "rk3588", str(tmp_path / "wide.onnx"), "--json")
    assert wide.returncode == 1
    assert json.loads(wide.stdout)["violations"] == 1
    missing = cli("--target", "rk3588", str(tmp_path / "nope.onnx"))
    assert missing.returncode == 2
    assert "Traceback" not in missing.stderr
    unknown = cli("--target", "rk9999", str(tmp_path / "fine.onnx"))
    assert unknown.returncode == 2


def test_a_dynamic_batch_is_a_violation_on_every_vendor() -> None:
    """rknn-toolkit2 and the simulated boards refuse a symbolic batch; preflight says so first."""
    for target in ("rk3588", "rv1106", "kl730", "rdk-x3"):
        model = build("conv3x3", (1, 3, 16, 16))
        model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
        report = preflight(model, target)
        assert not report.ok
        (violation,) = report.violations
        assert violation.rule == "static shapes"
        assert "dimension 0 is symbolic ('N' in ['N', 3, 16, 16])" in violation.message


def test_a_target_with_no_rule_that_applies_says_so_instead_of_passing() -> None:
    model = build("conv3x3", (1, 3, 16, 16))
    for target in ("kl730", "rdk-x3"):
        report = preflight(model, target)
        assert report.ok and not report.checked
        assert "not checked: no rule of" in report.summary()
        assert report.to_dict()["checked"] is False
    checked = preflight(model, "rk3588")
    assert checked.checked and checked.summary().startswith("conv3x3 on rk3588: passes (")


def test_a_kernel_of_unknown_size_is_noted_not_a_crash() -> None:
    """A weight given as a graph input of symbolic shape, no ``kernel_shape``: nothing to
    check the width against, and preflight says so."""
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
            helper.make_node("Conv", ["xf", "w"], ["y"], name="conv_sym"),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3, 4, 64]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, ["o", 3, "kh", "kw"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    report = preflight(model, "rk3588")
    assert "conv_sym: kernel size unknown, not checked" in report.notes
