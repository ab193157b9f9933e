"""KL730: every input and output format of the tables, several shapes, identity round trips.

A format the tables serve for the role must round-trip byte for byte; one they do not (e.g. the
HW formats as outputs, 4W4C8B and 4W4C8BHL for more than four channels, which Kneron's reading
of stride_npu cannot address) must be refused by the runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from npu_hil.harness.plugin import assert_run_ok
from npu_hil.harness.suite.hil_cases import SHAPES, codec_refusal, input_dtype, shape_id, tensor
from npu_hil.targets.kneron import kl730

if TYPE_CHECKING:
    from npu_hil.harness.farm.session import BoardSession
    from npu_hil.harness.plugin.run import RunModel

pytestmark = pytest.mark.soc(*kl730.TARGETS)

FORMATS = tuple(kl730.FORMATS)


def _stored(fmt: str) -> str:
    return "int16" if kl730.FORMATS[fmt].bits == 16 else "int8"


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("fmt", FORMATS)
def test_input_format_round_trip(
    run_model: RunModel, board: BoardSession, fmt: str, shape: tuple[int, ...]
) -> None:
    x = tensor(shape, input_dtype(board.target, "kneron"))
    refusal = codec_refusal(board.target, fmt, shape, _stored(fmt), "input")
    if refusal is not None:
        with pytest.raises(refusal):
            run_model("identity", {"input": x}, input_layout=fmt)
        return
    assert_run_ok(run_model("identity", {"input": x}, input_layout=fmt))


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("fmt", FORMATS)
def test_output_format_round_trip(
    run_model: RunModel, board: BoardSession, fmt: str, shape: tuple[int, ...]
) -> None:
    x = tensor(shape, input_dtype(board.target, "kneron"))
    refusal = codec_refusal(board.target, fmt, shape, _stored(fmt), "output")
    if refusal is not None:
        with pytest.raises(refusal):
            run_model("identity", {"input": x}, output_layout=fmt)
        return
    result = run_model("identity", {"input": x}, output_layout=fmt)
    assert_run_ok(result)
    assert result.outputs[0].layout.name == fmt
