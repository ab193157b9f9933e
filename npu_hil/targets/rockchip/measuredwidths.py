"""The widths at which rknn-toolkit2 stops building a first-layer convolution, measured
(``conv_widths.json``, made by ``tests/vendor_rknn/widths_record.py``): where a measurement
covers a convolution its verdict decides and the seed's rule A/B is kept beside it; elsewhere the
seed's rule stands (:func:`check_conv`, the unit's hook behind
:func:`npu_hil.targets.conv.check_conv`, which checks the arguments). The limits per platform and
what a measurement covers (kernel, dilation, input channels, a graph input, the heights):
docs/model-developer/preflight.md."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import cast

from typing_extensions import TypedDict

from npu_hil.targets.conv import ConvCheck, ConvCondition, ConvSite
from npu_hil.targets.rockchip.operators import load_measured
from npu_hil.targets.rockchip.tables import platform_of, seed_check

__all__ = ["DATA", "check_conv", "measured_verdict", "measurements"]

DATA = Path(__file__).with_name("conv_widths.json")


class HeightLimits(TypedDict):
    """A measured height: the ranges of widths refused, ``[first, last, the reasons]``."""

    refused: list[tuple[int, int, str]]


class MeasuredPlatform(TypedDict):
    """A platform of :class:`WidthsDocument`: per height measured (its text), the limits."""

    measured_on: str
    precision: str
    heights: dict[str, HeightLimits]


class WidthsDocument(TypedDict):
    """``conv_widths.json``: the convolution measured and, per platform, the widths refused."""

    provenance: dict[str, str]
    case: str
    kernel: list[int]
    dilation: list[int]
    in_channels: int
    tried_up_to: int
    platforms: dict[str, MeasuredPlatform]


@cache
def measurements() -> WidthsDocument:
    """The measured document (provenance, the case measured, per platform per height the
    refused ranges)."""
    return cast(WidthsDocument, load_measured(DATA))


def _covers(
    document: WidthsDocument,
    kernel_hw: tuple[int, int],
    dilation_hw: tuple[int, int],
    kind: str,
    site: ConvSite,
) -> bool:
    return (
        kind == "conv"
        and list(kernel_hw) == document["kernel"]
        and list(dilation_hw) == document["dilation"]
        and site.takes_input
        and site.in_channels in (None, document["in_channels"])
    )


def _height_entry(heights: dict[str, HeightLimits], height: int | None) -> tuple[str, str]:
    """The measured height whose limits apply, and a note where it is not the site's own."""
    measured = sorted(int(h) for h in heights)
    ranges = {json.dumps(heights[str(h)]["refused"]) for h in measured}
    if height is not None and height in measured:
        return str(height), ""
    if len(ranges) == 1:
        return str(measured[0]), ""  # the same at every height: a width limit
    if height is None:
        return str(measured[-1]), f"; height unknown: height {measured[-1]}'s limit taken"
    larger = [h for h in measured if h >= height]
    if larger:
        return str(larger[0]), f"; height {height} not measured: height {larger[0]}'s limit taken"
    return str(measured[-1]), (
        f"; measured up to height {measured[-1]}: a larger feature may be refused earlier"
    )


def measured_verdict(
    target: str,
    width: int,
    kernel_hw: tuple[int, int],
    dilation_hw: tuple[int, int],
    kind: str,
    first_layer: str,
    site: ConvSite,
) -> ConvCondition | None:
    """The compiler's measured verdict for this convolution (``measured``: built or not, and the
    sentence that says it, naming the measurement), or None where no measurement covers it (the
    seed's rule then stands)."""
    document = measurements()
    platform = document["platforms"].get(platform_of(target))
    if platform is None or platform["precision"] != first_layer:
        return None
    if not _covers(document, kernel_hw, dilation_hw, kind, site):
        return None
    if width > document["tried_up_to"]:
        return None
    height, note = _height_entry(platform["heights"], site.height)
    source = (
        f"measured: {document['provenance']['compiler']} on {platform['measured_on']}, "
        f"{document['case']}, height {height}"
    )
    for first, last, reason in platform["heights"][height]["refused"]:
        if first <= width <= last:
            return ConvCondition(
                "measured",
                False,
                f"width {width}: the compiler refuses widths {first}-{last} ({reason}) "
                f"[{source}{note}]",
            )
    return ConvCondition(
        "measured",
        True,
        f"width {width}: the compiler builds it (every width tried up to "
        f"{document['tried_up_to']} outside the refused ranges) [{source}{note}]",
    )


def check_conv(
    target: str,
    width: int,
    kernel_hw: tuple[int, int],
    dilation_hw: tuple[int, int],
    kind: str,
    rule: str | None,
    first_layer: str,
    site: ConvSite,
) -> ConvCheck:
    """The compiler's measured limit where one covers the convolution's ``site``, the seed's
    verdict beside it; else the seed's rule (:func:`seed_check`)."""
    seed = seed_check(target, width, kernel_hw, dilation_hw, kind, rule, first_layer)
    measured = measured_verdict(target, width, kernel_hw, dilation_hw, kind, first_layer, site)
    if measured is None:
        return seed
    seed_says = "supported" if seed.ok else f"unsupported, fails {', '.join(seed.failed)}"
    verdict = "supported" if measured.ok else "unsupported"
    return ConvCheck(
        ok=measured.ok,
        n=seed.n,
        rule=seed.rule,
        kind=kind,
        width=width,
        dilated_kernel_hw=seed.dilated_kernel_hw,
        conditions=(measured,),
        failed=() if measured.ok else ("measured",),
        message=(
            f"{target}, width {width}, kernel {kernel_hw[0]}x{kernel_hw[1]}: {verdict}: "
            f"{measured.text}; the seed's rule {seed.rule} says {seed_says}"
        ),
        seed=seed,
    )
