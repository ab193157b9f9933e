"""The Rockchip RKNN2 vendor unit: everything the harness asks of the eleven RKNN targets."""

from __future__ import annotations

from pathlib import Path

from npu_hil.targets.rockchip import (
    layouts,
    observed,
    preflight,
    quant,
    queries,
    tables,
    text,
    variants,
)
from npu_hil.targets.rockchip.artifact import read_rknn
from npu_hil.targets.rockchip.decode import RknnDecode
from npu_hil.targets.rockchip.reported import RknnReport
from npu_hil.targets.unit import SimOption, Vendor

NHWC_INPUT_CHANNELS = (1, 3, 4)
"""An RKNN model's native input is NHWC for these channel counts and NC1HWC2 for others (what
the runtimes reported for every compiled model of the observations but RK2118's)."""


def tables_text(target: str) -> str:
    return text.tables_text(target) + observed.deviations_text(target)


def default_input_layout(shape: tuple[int, ...]) -> str:
    if len(shape) == 4 and shape[1] not in NHWC_INPUT_CHANNELS:
        return "NC1HWC2"
    return "NHWC"


UNIT = Vendor(
    name="rockchip",
    targets=tables.TARGETS,
    build_layout=layouts.build,
    layout_names=layouts.layout_names,
    tables_text=tables_text,
    report=RknnReport(),
    quant=quant,
    decode=RknnDecode(),
    simulator="npu_hil.targets.rockchip.sim:RknnSim",
    sim_options={
        "precision": SimOption("RKNN first-layer precision: int8 or float16", tables.PRECISIONS)
    },
    default_input_layout=default_input_layout,
    pass_through_adapters=("rknn_native",),
    hardware_adapter="rknn_native",
    read_artifact=read_rknn,
    compatibility=Path(__file__).with_name("compatibility.json"),
    artifact_suffixes=(".rknn",),
    forensic_variants=variants.forensic_variants,
    fault_variants=variants.fault_variants,
    preflight=preflight.preflight,
    enum_prefixes=("RKNN_TENSOR_",),
    last_op_kind=observed.last_op_kind,
    extras={"check_observations": queries.check_observations},
)
