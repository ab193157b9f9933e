"""RKNN2: every input and output layout of the tables, several shapes, identity round trips.

A layout the target's tables list must come back byte for byte (device input buffer and output
buffer against the host codec); one they do not list must be refused by the runtime. On a real
board (or an emulated one) a case its compiled model or adapter cannot serve is skipped with the
reason (``rknn_board_gap``), never passed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest

from npu_hil.harness.plugin import assert_run_ok
from npu_hil.harness.suite.hil_cases import (
    SHAPES,
    input_dtype,
    rknn_board_gap,
    rknn_input_refusal,
    rknn_output_refusal,
    shape_id,
    tensor,
)
from npu_hil.targets.rockchip.layouts import INPUT_LAYOUTS, OUTPUT_LAYOUTS

if TYPE_CHECKING:
    from npu_hil.harness.farm.session import BoardSession
    from npu_hil.harness.plugin.run import RunModel

pytestmark = pytest.mark.vendor("rockchip")


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("layout", INPUT_LAYOUTS)
def test_input_layout_round_trip(
    run_model: RunModel, board: BoardSession, layout: str, shape: tuple[int, ...]
) -> None:
    gap = rknn_board_gap(board, "input", layout, shape)
    if gap is not None:
        pytest.skip(gap)
    dtype = input_dtype(board.target, "rockchip")
    refusal = rknn_input_refusal(board.target, layout, shape, dtype)
    x = tensor(shape, dtype)
    if refusal is not None:
        with pytest.raises(refusal):
            run_model("identity", {"input": x}, input_layout=layout)
        return
    result = run_model("identity", {"input": x}, input_layout=layout)
    assert_run_ok(result)
    assert result.inputs[0].reported  # the runtime's own attributes came back


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("layout", OUTPUT_LAYOUTS)
def test_output_layout_round_trip(
    run_model: RunModel, board: BoardSession, layout: str, shape: tuple[int, ...]
) -> None:
    gap = rknn_board_gap(board, "output", layout, shape)
    if gap is not None:
        pytest.skip(gap)
    dtype = input_dtype(board.target, "rockchip")
    x = tensor(shape, dtype)
    refusal = rknn_output_refusal(board.target, layout)
    if refusal is not None:
        with pytest.raises(refusal):
            run_model("identity", {"input": x}, output_layout=layout)
        return
    result = run_model("identity", {"input": x}, output_layout=layout)
    assert_run_ok(result)
    assert result.outputs[0].layout.name == layout
    np.testing.assert_array_equal(
        result.outputs[0].layout.unpack(result.outputs[0].data).shape, shape
    )
