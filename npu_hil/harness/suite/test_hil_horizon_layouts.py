"""Horizon BPU: strided input and output tensors (stride and aligned size as the tables predict
and the runtime reports), several shapes including odd ones, identity round trips."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from npu_hil.harness.plugin import assert_run_ok
from npu_hil.harness.suite.hil_cases import SHAPES, input_dtype, shape_id, tensor
from npu_hil.targets import horizon

if TYPE_CHECKING:
    from npu_hil.harness.farm.session import BoardSession
    from npu_hil.harness.plugin.run import RunModel

pytestmark = pytest.mark.vendor("horizon")

DTYPES = ("float32", "int8", "uint8")


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_round_trip(
    run_model: RunModel, board: BoardSession, dtype: str, shape: tuple[int, ...]
) -> None:
    assert board.target in horizon.TARGETS
    import numpy as np

    x = tensor(shape, np.dtype(dtype))
    result = run_model("identity", {"input": x}, input_layout="strided")
    assert_run_ok(result)
    assert [t.layout.name for t in result.tensors] == ["strided", "strided"]


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_strided_default_input(
    run_model: RunModel, board: BoardSession, shape: tuple[int, ...]
) -> None:
    x = tensor(shape, input_dtype(board.target, "horizon"))
    assert_run_ok(run_model("identity", {"input": x}))
