"""Which ONNX operators rknn-toolkit2 builds per platform, measured one operator a model
(``operators.json``, made by ``tests/vendor_rknn/ops_record.py``).

Rockchip's operator list in its documents is per toolkit release and does not say what the
compiler of this release refuses on which platform; the measurement does. "Built" means the
compiler made a model file (the NPU, or the runtime's CPU fallback, runs the operator); a
refusal keeps the compiler's own error line. Preflight flags every node whose operator the
compiler refused for the target, and names the operators of a model that were not measured.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from functools import cache
from pathlib import Path
from typing import cast

from typing_extensions import TypedDict

from npu_hil.targets.rockchip.compiler.reasons import compiler_reason
from npu_hil.targets.rockchip.tables import platform_of

__all__ = ["DATA", "document_of", "measured_operators", "refusal"]

DATA = Path(__file__).with_name("operators.json")


class OperatorRecord(TypedDict):
    """One compiler record (``tests/data/zoo/rknn_ops.json.gz``): an operator on a target."""

    target: str
    op: str
    precision: str
    built: bool
    reason: str | None


class MeasuredPlatform(TypedDict):
    """A platform of :class:`OperatorsDocument`: operator → the compiler's refusal."""

    measured_on: str
    precision: str
    refused: dict[str, str]


class OperatorsDocument(TypedDict):
    """``operators.json``: the operators tried and, per platform, those refused."""

    provenance: dict[str, str]
    operators: list[str]
    platforms: dict[str, MeasuredPlatform]


@cache
def measured_operators() -> OperatorsDocument:
    """The measured document: provenance, the operators tried, per platform the refusals."""
    document = json.loads(DATA.read_text(encoding="utf-8"))
    # The package's own file, held to its records by tests/targets/test_measured_operators.py.
    if not isinstance(document, dict) or not isinstance(document.get("platforms"), dict):
        raise ValueError(f"{DATA}: expected an object with its platforms")
    return cast(OperatorsDocument, document)


def refusal(target: str, op_type: str, attributes: Collection[str] = ()) -> str | None:
    """The compiler's reason for refusing a node of ``op_type`` with ``attributes`` (their
    names) on ``target``'s platform; None when it built it or when it was not measured
    (:func:`measured_operators` lists what was). A measured variant ``"<op> without <attr>"``
    applies to a node of that operator that leaves the attribute out."""
    platform = measured_operators()["platforms"].get(platform_of(target))
    if platform is None:
        return None
    for key, reason in platform["refused"].items():
        op, _, missing = key.partition(" without ")
        if op == op_type and (not missing or missing not in attributes):
            return f"{key}: {reason}" if missing else str(reason)
    return None


def document_of(records: list[OperatorRecord], provenance: dict[str, str]) -> OperatorsDocument:
    """The package's document from the compiler's records (``tests/data/zoo/rknn_ops.json.gz``:
    per target and operator, built or refused with the reason)."""
    platforms: dict[str, MeasuredPlatform] = {}
    for record in sorted(records, key=lambda r: (r["target"], r["op"])):
        platform = platforms.setdefault(
            platform_of(record["target"]),
            {"measured_on": record["target"], "precision": record["precision"], "refused": {}},
        )
        if not record["built"]:
            platform["refused"][record["op"]] = compiler_reason(record["reason"] or "")
    return {
        "provenance": provenance,
        "operators": sorted({r["op"].partition(" without ")[0] for r in records}),
        "platforms": dict(sorted(platforms.items())),
    }
