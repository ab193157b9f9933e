"""Which ONNX operators rknn-toolkit2 builds per platform, measured one operator a model
(``operators.json``, made by ``tests/vendor_rknn/ops_record.py``): Rockchip's operator lists do
not say what this release's compiler refuses on which platform. "Built" means the compiler made a
model file (the NPU, or the runtime's CPU fallback, runs it); a refusal keeps the compiler's own
error line."""

from __future__ import annotations

import json
from collections.abc import Collection
from functools import cache
from pathlib import Path
from typing import cast

from typing_extensions import TypedDict

from npu_hil.targets.rockchip.tables import platform_of

__all__ = ["DATA", "load_measured", "measured_operators", "refusal"]

DATA = Path(__file__).with_name("operators.json")


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


def load_measured(path: Path) -> dict[str, object]:
    """One of the package's measured documents (this one, ``conv_widths.json``), each held to
    its records by its test (tests/targets/test_measured_*.py)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict) or not isinstance(document.get("platforms"), dict):
        raise ValueError(f"{path}: expected an object with its platforms")
    return document


@cache
def measured_operators() -> OperatorsDocument:
    """The measured document: provenance, the operators tried, per platform the refusals."""
    return cast(OperatorsDocument, load_measured(DATA))


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
