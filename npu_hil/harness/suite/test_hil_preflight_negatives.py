"""Preflight negatives: a convolution wider than the target's width limit (the compiler's,
measured, where it was; else the seed's rule) is refused before a board is involved
(``preflight``) and by the board's runtime at load; a width the limit allows passes both. Targets
without width limits in the seeds accept any width."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import onnx
import pytest
from onnx import helper

from npu_hil.harness.errors import DeviceError
from npu_hil.harness.models import conv3x3
from npu_hil.harness.plugin import assert_run_ok
from npu_hil.harness.preflight import preflight
from npu_hil.harness.suite.hil_cases import input_dtype, tensor
from npu_hil.targets import ConvSite, check_conv, rockchip

if TYPE_CHECKING:
    from npu_hil.harness.farm.session import BoardSession
    from npu_hil.harness.plugin.run import RunModel

WIDTHS = (2048, 8192)


def _declared_input(model: onnx.ModelProto, dtype: np.dtype) -> onnx.ModelProto:
    """The model as the board's compiled artifact takes it: the input declared in the type the
    application feeds (uint8 images, float16 on RK2118), which picks the input-table row."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.graph.input[0].type.tensor_type.elem_type = helper.np_dtype_to_tensor_dtype(dtype)
    return copy


@pytest.mark.vendor("rockchip")
@pytest.mark.parametrize("width", WIDTHS)
def test_conv_width_rule(run_model: RunModel, board: BoardSession, width: int) -> None:
    target = board.target
    shape = (1, 3, 1, width)
    model = conv3x3(shape)
    # The first layer on a 3-channel, 1-row input: where the compiler's limit was measured, it
    # decides (npu_hil.targets.rockchip.measuredwidths), else the seed's rule.
    site = ConvSite(height=1, in_channels=3, takes_input=True)
    layer = rockchip.default_first_layer(target)
    allowed = check_conv(target, width, (3, 3), first_layer=layer, site=site).ok
    dtype = input_dtype(target, "rockchip")
    report = preflight(_declared_input(model, dtype), target, output_precision=layer)
    assert report.ok is allowed, report.summary()
    x = tensor(shape, dtype)
    if allowed:
        assert_run_ok(run_model(model, {"input": x}, tolerance=1.0))
    else:
        assert [f.node for f in report.violations] == ["conv_0"], report.summary()
        with pytest.raises(DeviceError, match="conv_0"):
            run_model(model, {"input": x})


@pytest.mark.vendor("kneron", "horizon")
def test_no_width_limit(board: BoardSession) -> None:
    report = preflight(conv3x3((1, 3, 1, 8192)), board.target)
    assert report.ok and not report.checked  # "not checked", never "passes"
    assert any("no convolution width limits" in note for note in report.notes)
