"""The operators rknn-toolkit2 2.5.0 refuses per platform (``tests/data/zoo/rknn_ops.json.gz``,
one operator a model): preflight flags them and the simulated board refuses them at load, with
the compiler's reason; an operator it built passes both, and one never measured is named in a
note."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from npu_hil.harness.preflight import preflight
from npu_hil.harness.sim import SimNpu, SimRefusal
from npu_hil.targets.rockchip.operators import DATA, measured_operators
from npu_hil.targets.rockchip.tables import PLATFORM_OF

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vendor_rknn"))
from measured import operators_document_of
from ops_record import model_of

RECORDS = Path(__file__).resolve().parents[1] / "data" / "zoo" / "rknn_ops.json.gz"


def _records() -> dict[str, Any]:
    with gzip.open(RECORDS, "rt", encoding="utf-8") as stream:
        document: dict[str, Any] = json.load(stream)
    return document


def test_the_shipped_refusals_are_derived_from_the_compilers_records() -> None:
    stored = _records()
    shipped = json.loads(DATA.read_text(encoding="utf-8"))
    assert shipped == operators_document_of(stored["records"], shipped["provenance"])
    assert shipped["provenance"]["compiler"] == stored["provenance"]["compiler"]
    assert len(shipped["operators"]) >= 70 and len(shipped["platforms"]) == 7


def test_a_layer_norm_without_epsilon_is_refused_and_with_it_passes() -> None:
    """rknn-toolkit2 2.5.0 stops on a LayerNormalization that leaves ONNX's default epsilon
    out (KeyError in its LayerNormalization pass), on every platform; with epsilon it builds."""
    for target in ("rk3588", "rv1106", "rk2118"):
        bare = preflight(model_of("LayerNormalization without epsilon"), target)
        (finding,) = [f for f in bare.findings if f.rule == "operators"]
        assert "LayerNormalization without epsilon" in finding.message
        assert "KeyError" in finding.message
        given = preflight(model_of("LayerNormalization"), target)
        assert not [f for f in given.findings if f.rule == "operators"]


def _cases() -> list[dict[str, Any]]:
    return _records()["records"]


@pytest.mark.parametrize("record", _cases(), ids=lambda r: f"{r['target']}-{r['op']}")
def test_preflight_and_the_simulated_board_say_what_the_compiler_did(
    record: dict[str, Any],
) -> None:
    model = model_of(record["op"])
    members = [t for t, p in PLATFORM_OF.items() if p == PLATFORM_OF[record["target"]]]
    for target in members:
        report = preflight(model, target, output_precision=record["precision"])
        flagged = [f for f in report.findings if f.rule == "operators"]
        if record["built"]:
            assert not flagged, (target, report.summary())
            continue
        (finding,) = flagged
        assert not finding.ok and not report.ok
        assert record["op"] in finding.message and "rknn-toolkit2 2.5.0 refuses" in finding.message
        with pytest.raises(SimRefusal) as refused:
            SimNpu(target, precision=record["precision"]).load(model)
        op_type = record["op"].partition(" without ")[0]
        assert f"{op_type}: the compiler refuses it" in str(refused.value)


def test_an_operator_never_measured_is_named_not_passed() -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])
    node = helper.make_node("Celu", ["x"], ["y"])
    graph = helper.make_graph([node], "celu", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    assert "Celu" not in measured_operators()["operators"]
    report = preflight(model, "rk3588")
    assert any("operators not measured" in n and "Celu" in n for n in report.notes)
