"""The sim's options: checked, with the accepted ones named in every refusal."""

from __future__ import annotations

from typing import Any

import pytest

from npu_hil.harness.sim import SIM_TARGETS, SimConfigError, SimNpu, vendor_of
from npu_hil.harness.sim.options import SimOptions


def test_every_target_has_a_vendor() -> None:
    assert len(SIM_TARGETS) == 15
    assert {vendor_of(t) for t in SIM_TARGETS} == {"rockchip", "horizon", "kneron"}
    for target in SIM_TARGETS:
        assert SimNpu(target).target == target


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({}, "'target' is required"),
        ({"target": "rk3599"}, "unknown target 'rk3599'"),
        ({"target": "kl730", "precision": "int8"}, r"unknown option\(s\) precision"),
        ({"target": "rk3588", "output_quant": "shift"}, r"unknown option\(s\) output_quant"),
        ({"target": "rk3588", "precision": "int4"}, "precision must be one of int8, float16"),
        ({"target": "rdk-x5", "output_quant": "int8"}, "output_quant must be one of"),
        ({"target": "rk3588", "executor": "tvm"}, "executor must be one of"),
        ({"target": "rk3588", "buffer_offset": -1}, "buffer_offset must be"),
        ({"target": "rk3588", "buffer_offsets": {"x": True}}, "buffer_offsets.x must be"),
        ({"target": "rk3588", "buffer_offsets": [1]}, "buffer_offsets must map"),
        ({"target": "rk3588", "input_layout": ""}, "input_layout must be a layout name"),
    ],
)
def test_bad_options(options: dict[str, Any], match: str) -> None:
    with pytest.raises(SimConfigError, match=match):
        SimOptions.from_mapping(options)


def test_unknown_options_list_the_accepted_ones() -> None:
    with pytest.raises(SimConfigError, match="accepted: target: the board to be") as exc:
        SimNpu("rdk-x3", falts=["hang"])
    assert "output_quant: Horizon outputs" in exc.value.message


def test_options_merge_and_offsets_per_tensor() -> None:
    npu = SimNpu(options={"target": "kl730"}, buffer_offsets={"output": 4}, buffer_offset=2)
    assert npu.options.offset_for("output") == 4 and npu.options.offset_for("input") == 2
    assert SimNpu("rk3588", options={"target": "kl730"}).target == "rk3588"
