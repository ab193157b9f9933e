"""The package's measured documents (``npu_hil/targets/rockchip/operators.json`` and
``conv_widths.json``) derived from the compiler's records (``tests/data/zoo/rknn_ops.json.gz``,
``rknn_widths.json.gz``): what the recorders write and the tests hold the shipped files to."""

from __future__ import annotations

from typing import Any, cast

from typing_extensions import TypedDict

from npu_hil.targets.rockchip.measuredwidths import WidthsDocument
from npu_hil.targets.rockchip.operators import MeasuredPlatform, OperatorsDocument
from npu_hil.targets.rockchip.tables import platform_of

CASE = "a 3x3 convolution (dilation 1) taking a 3-channel graph input"


class OperatorRecord(TypedDict):
    """One compiler record (``tests/data/zoo/rknn_ops.json.gz``): an operator on a target."""

    target: str
    op: str
    precision: str
    built: bool
    reason: str | None


class WidthRecord(TypedDict):
    """One compiler record (``tests/data/zoo/rknn_widths.json.gz``): a width on a target."""

    target: str
    precision: str
    height: int
    width: int
    built: bool
    reason: str | None


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


def operators_document_of(
    records: list[OperatorRecord], provenance: dict[str, str]
) -> OperatorsDocument:
    """The package's document from the compiler's records (per target and operator, built or
    refused with the reason)."""
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


def widths_document_of(records: list[WidthRecord], provenance: dict[str, str]) -> WidthsDocument:
    """The measured document from the compiler's records (per target, precision, height and
    width, built or refused with the compiler's reason): per platform and height, the ranges of
    widths refused, each from its first refused width to the last refused one before a width
    that builds again."""
    platforms: dict[str, Any] = {}
    for record in sorted(records, key=lambda r: (r["target"], r["height"], r["width"])):
        platform = platforms.setdefault(
            platform_of(record["target"]),
            {"measured_on": record["target"], "precision": record["precision"], "heights": {}},
        )
        ranges = platform["heights"].setdefault(str(record["height"]), {"refused": []})["refused"]
        if record["built"]:
            ranges.append(None)  # closes the range before it
            continue
        reason = compiler_reason(record["reason"] or "")
        if ranges and ranges[-1] is not None:
            # Refused widths with none built between them are one range, whatever each said.
            ranges[-1][1] = record["width"]
            if reason not in ranges[-1][2].split("; "):
                ranges[-1][2] += f"; {reason}"
        else:
            ranges.append([record["width"], record["width"], reason])
    for platform in platforms.values():
        for entry in platform["heights"].values():
            entry["refused"] = [r for r in entry["refused"] if r is not None]
    # Built as plain lists (a range grows while refusals follow), the document's shape at the end.
    document = {
        "provenance": provenance,
        "case": CASE,
        "kernel": [3, 3],
        "dilation": [1, 1],
        "in_channels": 3,
        "tried_up_to": max(r["width"] for r in records),
        "platforms": dict(sorted(platforms.items())),
    }
    return cast(WidthsDocument, document)
