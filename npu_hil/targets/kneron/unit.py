"""The Kneron KL730 vendor unit: everything the harness asks of the KL730."""

from __future__ import annotations

from pathlib import Path

from npu_hil.targets.kneron import kl730, quant
from npu_hil.targets.kneron.artifact import read_kneron_model
from npu_hil.targets.kneron.reported import KneronReport
from npu_hil.targets.unit import ApiPath, NpuThroughput, PixelInput, Vendor

NPU_THROUGHPUT = {
    "kl730": NpuThroughput(3.6, 1, "KL730: about 3.6 TOPS (Kneron's int8-equivalent figure)"),
}

UNIT = Vendor(
    name="kneron",
    targets=kl730.TARGETS,
    build_layout=kl730.build,
    layout_names=lambda: tuple(kl730.FORMATS),
    tables_text=kl730.tables_text,
    report=KneronReport(),
    quant=quant,
    decode=quant.KneronDecode(),
    simulator="npu_hil.targets.kneron.sim:KneronSim",
    npu_throughput=NPU_THROUGHPUT,
    default_input_layout=lambda shape: "1W16C8B",
    pass_through_adapters=("kneron",),
    hardware_adapter="kneron",
    read_artifact=read_kneron_model,
    compatibility=Path(__file__).with_name("compatibility.json"),
    identity=Path(__file__).with_name("identity.json"),
    # Kneron PLUS (kp.inference) is the one way to run a KL730 model: the cross-API check is
    # not applicable.
    api_paths=(ApiPath("kneron", "Kneron PLUS (kp.inference)", native=True),),
    # Kneron PLUS, "Hardware Image Preprocessing": the device's normalizer applies one of a few
    # fixed templates (RGB/256 - 0.5 is SUB128 at radix 8); any other mean/std is an input
    # BatchNormalization the toolchain folds into the model's first layer.
    pixel_input=PixelInput(
        "float32",
        offset=128.0,
        divisor=256.0,
        how=(
            "the device's hardware normalizer applies the template RGB/256 - 0.5 (SUB128, radix "
            "8) and the rest of the declared mean/std is folded into the model's first layer"
        ),
    ),
    artifact_suffixes=(".nef",),
    forensic_variants=kl730.forensic_variants,
    fault_variants=kl730.fault_variants,
    enum_prefixes=("KP_MODEL_TENSOR_DATA_LAYOUT_",),
)
