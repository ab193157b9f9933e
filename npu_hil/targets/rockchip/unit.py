"""The Rockchip RKNN2 vendor unit: everything the harness asks of the eleven RKNN targets."""

from __future__ import annotations

from pathlib import Path

from npu_hil.targets.rockchip import (
    layouts,
    measuredwidths,
    observed,
    preflight,
    quant,
    queries,
    tables,
)
from npu_hil.targets.rockchip.apipaths import API_PATHS
from npu_hil.targets.rockchip.artifact import read_rockchip_model
from npu_hil.targets.rockchip.compiler.build import COMPILER
from npu_hil.targets.rockchip.reported import RockchipReport
from npu_hil.targets.unit import NpuThroughput, PixelInput, SimOption, Vendor


def tables_text(target: str) -> str:
    return tables.tables_text(target) + observed.deviations_text(target)


def default_input_layout(shape: tuple[int, ...]) -> str:
    if len(shape) == 4 and shape[1] not in queries.NHWC_CHANNELS:
        return "NC1HWC2"
    return "NHWC"


NPU_THROUGHPUT = {
    # The SoC briefs' NPU figure (int8 TOPS).
    "rk3588": NpuThroughput(
        6.0,
        3,
        "RK3588 brief: 6 TOPS over 3 NPU cores; a model runs on "
        "one core by default (core mask auto)",
    ),
    "rk3576": NpuThroughput(
        6.0, 2, "RK3576 brief: 6 TOPS over 2 NPU cores, one per model by default"
    ),
    "rk3566": NpuThroughput(0.8, 1, "RK3566 brief: 0.8 TOPS"),
    "rk3568": NpuThroughput(1.0, 1, "RK3568 brief: 1 TOPS"),
    "rk3562": NpuThroughput(1.0, 1, "RK3562 brief: 1 TOPS"),
    "rv1103": NpuThroughput(0.5, 1, "RV1103 brief: 0.5 TOPS"),
    "rv1106": NpuThroughput(1.0, 1, "RV1106 brief: 1 TOPS"),
    "rv1103b": NpuThroughput(0.5, 1, "RV1103B: taken as RV1103's 0.5 TOPS"),
    "rv1106b": NpuThroughput(1.0, 1, "RV1106B: taken as RV1106's 1 TOPS"),
    "rv1126b": NpuThroughput(3.0, 1, "RV1126B brief: 3 TOPS"),
    "rk2118": NpuThroughput(
        0.1,
        1,
        "RK2118: an audio SoC whose small NPU runs float16 only; "
        "no published TOPS figure found, taken as 0.1 (the slowest here)",
    ),
}

UNIT = Vendor(
    name="rockchip",
    targets=tables.TARGETS,
    build_layout=layouts.build,
    layout_names=lambda: layouts.OUTPUT_LAYOUTS,
    tables_text=tables_text,
    report=RockchipReport(),
    quant=quant,
    decode=quant.RockchipDecode(),
    simulator="npu_hil.targets.rockchip.sim:RockchipSim",
    sim_options={
        "precision": SimOption("RKNN first-layer precision: int8 or float16", tables.PRECISIONS)
    },
    npu_throughput=NPU_THROUGHPUT,
    default_input_layout=default_input_layout,
    pass_through_adapters=("rknn_native",),
    hardware_adapter="rknn_native",
    read_artifact=read_rockchip_model,
    compatibility=Path(__file__).with_name("compatibility.json"),
    identity=Path(__file__).with_name("identity.json"),
    api_paths=API_PATHS,
    compiler=COMPILER,
    artifact_suffixes=(".rknn",),
    forensic_variants=layouts.forensic_variants,
    fault_variants=layouts.fault_variants,
    preflight=preflight.preflight,
    pixel_input=PixelInput(
        "uint8",
        how=(
            "rknn-toolkit2's config(mean_values, std_values) compiles the normalization into the "
            "model; the runtime takes the uint8 pixels (the one input type RV1103/RV1106 take "
            "without a CPU mean/scale step)"
        ),
        # Measured (rknn-toolkit2 2.5.0, mean/std given): RK2118 builds a float16 input, the
        # pixels exact in it; the others an int8 input the runtime fills from uint8.
        dtypes={"rk2118": "float16"},
    ),
    check_conv=measuredwidths.check_conv,
    enum_prefixes=("RKNN_TENSOR_",),
    last_op_kind=observed.last_op_kind,
    extras={"check_observations": queries.check_observations},
)
