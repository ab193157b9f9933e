"""The zoo of public architectures against what rknn-toolkit2 2.5.0 did with them: the simulated
boards and preflight accept what the compiler built, and lay every input and output out as the
compiled file's tensor table says (tests/data/zoo/rknn_zoo.json.gz; zoo_agreement.py)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
import zoo_agreement as agreement
from zoo_models import BY_NAME, ZOO

from npu_hil.harness.models.reference import reference_outputs
from npu_hil.harness.preflight import preflight
from npu_hil.targets import rockchip
from npu_hil.targets.rockchip import observed

pytestmark = pytest.mark.real_models


def test_the_zoo_covers_the_traits_real_networks_have() -> None:
    assert len(ZOO) >= 12
    ranks: Counter[int] = Counter()
    ops: set[str] = set()
    for arch in ZOO:
        model = arch.build()
        ops |= {node.op_type for node in model.graph.node}
        ranks.update(len(o.type.tensor_type.shape.dim) for o in model.graph.output)
        groups = [a.i for node in model.graph.node for a in node.attribute if a.name == "group"]
        ops |= {"grouped" for g in groups if g > 1}
    assert {1, 2, 3, 4} <= set(ranks), ranks
    wanted = {"Gemm", "MatMul", "ArgMax", "TopK", "Softmax", "Concat", "Reshape", "Transpose"}
    assert wanted | {"Resize", "grouped"} <= ops, sorted(wanted - ops)
    assert sum(len(arch.build().graph.output) > 1 for arch in ZOO) >= 3


@pytest.mark.parametrize("arch", ZOO, ids=lambda a: a.name)
def test_every_architecture_runs_on_onnxruntime(arch: object) -> None:
    model: onnx.ModelProto = arch.build()  # type: ignore[attr-defined]
    assert model.SerializeToString() == arch.build().SerializeToString()  # type: ignore[attr-defined]
    feeds = {
        i.name: np.ones([d.dim_value for d in i.type.tensor_type.shape.dim], np.float32)
        for i in model.graph.input
    }
    outputs = reference_outputs(model, feeds)
    assert all(np.all(np.isfinite(v.astype(np.float64))) for v in outputs.values())


def test_the_data_says_where_it_came_from() -> None:
    provenance = agreement.document()["provenance"]
    assert provenance["compiler"] == "rknn-toolkit2 2.5.0"
    assert provenance["made_by"] == "python tests/vendor_rknn/zoo_record.py"
    records = agreement.records()
    assert {r["model"] for r in records} == {a.name for a in ZOO}
    assert {r["target"] for r in records} == set(agreement.ALL_TARGETS)
    members = {t for group in agreement.ALL_TARGETS.values() for t in group}
    assert members == set(rockchip.TARGETS)
    held = [r for r in records if agreement.held_out(r)]
    assert 0.35 < len(held) / len(records) < 0.65


def _agreement(records: list[dict[str, object]]) -> tuple[int, list[agreement.Difference]]:
    held = 0
    differences: list[agreement.Difference] = []
    for record in records:
        found, fields = agreement.compare(record)  # type: ignore[arg-type]
        held += fields
        differences += found
    return held, differences


def test_the_simulated_boards_lay_out_the_held_out_half_as_the_compiler_did() -> None:
    records = [r for r in agreement.records() if agreement.held_out(r)]
    held, differences = _agreement(records)
    share = 1 - len(differences) / held
    print(f"\nheld-out half: {len(records)} builds, {held} fields, {share:.1%} predicted")
    assert share >= 0.95, "\n".join(map(str, differences))
    assert not differences, "\n".join(map(str, differences))


def test_the_simulated_boards_lay_out_every_build_as_the_compiler_did() -> None:
    held, differences = _agreement(agreement.records())
    assert held > 900
    assert not differences, "\n".join(map(str, differences))


@pytest.mark.parametrize("group", sorted(agreement.ALL_TARGETS))
def test_every_member_of_a_platform_group_agrees(group: str) -> None:
    """The zoo was compiled for one target per platform group; the others lay out alike."""
    for other in agreement.ALL_TARGETS[group]:
        for record in agreement.records():
            if record["target"] != group or other == group:
                continue
            found, _ = agreement.compare(record, target=other)
            assert not found, "\n".join(map(str, found))


def test_preflight_passes_every_model_the_compiler_built() -> None:
    refused = []
    for record in agreement.records():
        model = BY_NAME[record["model"]].build()
        for target in agreement.ALL_TARGETS[record["target"]]:
            report = preflight(
                model,
                target,
                first_layer=record["precision"],
                output_precision=record["precision"],
            )
            if record["built"] and not report.ok:
                refused.append(report.summary())
    assert not refused, "\n".join(refused)


def test_a_classifier_on_rv1106_keeps_the_seeds_row_beside_the_fact() -> None:
    record = next(
        r for r in agreement.records() if (r["model"], r["target"]) == ("mobilenet_v2", "rv1106")
    )
    assert record["outputs"][0]["size"] == 1024
    run = agreement.simulated_run(record)
    (output,) = run.outputs
    assert output.attributes["size"] == 1024
    table_row = output.codec_layout.attributes["table_row"]
    assert "RV1103/RV1106 lists no output row of rank not 4" in table_row
    deviation = observed.deviation("non4d-outputs")
    assert deviation.compiler_only and "no runtime" in deviation.provenance("rv1106")
