"""The Horizon BPU vendor unit: everything the harness asks of the RDK X3, X5 and S100."""

from __future__ import annotations

from pathlib import Path

from npu_hil.targets.horizon import layouts, preflight, quant
from npu_hil.targets.horizon.apipaths import API_PATHS
from npu_hil.targets.horizon.artifact import read_horizon_model
from npu_hil.targets.horizon.reported import HorizonReport
from npu_hil.targets.unit import NpuThroughput, PixelInput, SimOption, Vendor

NPU_THROUGHPUT = {
    # The RDK boards' published BPU figure.
    "rdk-x3": NpuThroughput(5.0, 1, "RDK X3 (Sunrise 3): 5 TOPS"),
    "rdk-x5": NpuThroughput(10.0, 1, "RDK X5 (Sunrise 5): 10 TOPS"),
    "rdk-s100": NpuThroughput(80.0, 1, "RDK S100: 80 TOPS"),
}

UNIT = Vendor(
    name="horizon",
    targets=layouts.TARGETS,
    build_layout=layouts.build,
    layout_names=lambda: layouts.LAYOUTS,
    tables_text=layouts.tables_text,
    report=HorizonReport(),
    quant=quant,
    decode=quant.HorizonDecode(),
    simulator="npu_hil.targets.horizon.sim:HorizonSim",
    sim_options={
        "output_quant": SimOption(
            "Horizon outputs: scale (default), shift or none (F32)", ("scale", "shift", "none")
        )
    },
    npu_throughput=NPU_THROUGHPUT,
    default_input_layout=lambda shape: "strided",
    pass_through_adapters=("hobot_native",),
    hardware_adapter="hobot_native",
    read_artifact=read_horizon_model,
    compatibility=Path(__file__).with_name("compatibility.json"),
    identity=Path(__file__).with_name("identity.json"),
    api_paths=API_PATHS,
    artifact_suffixes=(".hbm", ".bin"),
    forensic_variants=layouts.forensic_variants,
    fault_variants=layouts.fault_variants,
    preflight=preflight.preflight,
    pixel_input=PixelInput(
        "uint8",
        how=(
            "hb_mapper's norm_type data_mean_and_scale (mean_value, scale_value = 1/std) compiles "
            "the normalization into the model; the runtime takes the uint8 pixels"
        ),
    ),
    enum_prefixes=("HB_DNN_TENSOR_TYPE_",),
    address_rule=(
        "seeds/003: the first address of every BPU input and output buffer is 32-byte aligned"
    ),
)
