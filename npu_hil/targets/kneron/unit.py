"""The Kneron KL730 vendor unit: everything the harness asks of the KL730."""

from __future__ import annotations

from pathlib import Path

from npu_hil.targets.kneron import kl730, quant, variants
from npu_hil.targets.kneron.artifact import read_nef
from npu_hil.targets.kneron.decode import Kl730Decode
from npu_hil.targets.kneron.reported import Kl730Report
from npu_hil.targets.unit import ApiPath, NpuThroughput, Vendor


def default_input_layout(shape: tuple[int, ...]) -> str:
    return "1W16C8B"


NPU_THROUGHPUT = {
    "kl730": NpuThroughput(3.6, 1, "KL730: about 3.6 TOPS (Kneron's int8-equivalent figure)"),
}

UNIT = Vendor(
    name="kneron",
    targets=kl730.TARGETS,
    build_layout=kl730.build,
    layout_names=kl730.layout_names,
    tables_text=kl730.tables_text,
    report=Kl730Report(),
    quant=quant,
    decode=Kl730Decode(),
    simulator="npu_hil.targets.kneron.sim:Kl730Sim",
    npu_throughput=NPU_THROUGHPUT,
    default_input_layout=default_input_layout,
    pass_through_adapters=("kneron",),
    hardware_adapter="kneron",
    read_artifact=read_nef,
    compatibility=Path(__file__).with_name("compatibility.json"),
    identity=Path(__file__).with_name("identity.json"),
    # Kneron PLUS is the one way to run a model on a KL730.
    api_paths=(ApiPath("kneron", "Kneron PLUS (kp.inference)", native=True),),
    artifact_suffixes=(".nef",),
    forensic_variants=variants.forensic_variants,
    fault_variants=variants.fault_variants,
    enum_prefixes=("KP_MODEL_TENSOR_DATA_LAYOUT_",),
)
