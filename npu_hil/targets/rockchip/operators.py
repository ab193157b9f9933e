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

__all__ = [
    "DATA",
    "compiler_reason",
    "document_of",
    "load_measured",
    "measured_operators",
    "refusal",
]

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


def load_measured(path: Path) -> dict[str, object]:
    """One of the package's measured documents (this one, ``conv_widths.json``), each held to
    its records by its test (tests/targets/test_measured_*.py)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict) or not isinstance(document.get("platforms"), dict):
        raise ValueError(f"{path}: expected an object with its platforms")
    return document


def compiler_reason(text: str) -> str:
    """A refused build's reason in one line, as the measured data keep it: the compiler's own
    error line without its time stamp (``E RKNN: [12:05:07.196] failed to tile argb mode
    layer!``), else the Python exception the toolkit stopped on and the function it left, else
    the whole reason (``BuildFailure`` joins its reason and the log's last lines with " / ")."""
    parts = [part.strip() for part in text.split(" / ")]
    for part in parts:
        if part.startswith("E RKNN:"):
            return part.split("] ", 1)[-1].strip().rstrip("!")
    errors = [part for part in parts if "Error" in part.split(":", 1)[0]]
    frames = [part.rsplit(" in ", 1)[-1] for part in parts if part.startswith("File ")]
    if errors:
        return errors[-1] + (f" (in {frames[-2 if len(frames) > 1 else -1]})" if frames else "")
    return text


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
