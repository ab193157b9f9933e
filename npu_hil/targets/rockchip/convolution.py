"""RKNN2 V2.5.0 (seed ``seeds/002_0de9e292831d3a07.txt``): the NC1HWC2 block size C2 and the
convolution width limits (§2), as data and table lookups."""

from __future__ import annotations

from dataclasses import dataclass

from npu_hil.harness.errors import LayoutError
from npu_hil.targets.rockchip.tables import (
    CONV_KINDS,
    RK2118,
    RK3562,
    RK3566_RK3568,
    RK3576_RV1126B,
    RK3588,
    RV1103_RV1106,
    RV1103B_RV1106B,
    WidthRule,
    check_choice,
    output_row,
    platform_of,
)

# --------------------------------------------------------------------------------------------
# NC1HWC2 block size C2
# --------------------------------------------------------------------------------------------

C2_USER_GUIDE_SOURCE = "RKNPU User Guide v1.5.2 table 4-6"
C2_DERIVED_SOURCE = "derived: half the seed's last-layer-conv channel multiple"

# The seed gives channel multiples for NC1HWC2 but not the block C2 itself. The User Guide table
# names C2 for four platforms, and there it is exactly half the seed's "last layer conv" multiple;
# for the platforms the guide does not cover we apply that same relation. This is a reading, not a
# fact: the native dims the device reports (RKNN_QUERY_NATIVE_OUTPUT_ATTR) always win, and a
# disagreement is a finding for the report.
_C2_USER_GUIDE: dict[tuple[str, str], int] = {
    (RK3566_RK3568, "int8"): 8,
    (RK3566_RK3568, "float16"): 4,
    (RK3588, "int8"): 16,
    (RK3588, "float16"): 8,
    # The guide also gives 8 for float16 here, but the seed's output table lists no float16
    # output on RV1103/RV1106, so c2_default refuses that combination (the seed wins).
    (RV1103_RV1106, "int8"): 16,
    (RK3562, "int8"): 16,
    (RK3562, "float16"): 8,
}


def c2_default(target: str, precision: str) -> tuple[int, str]:
    """The predicted NC1HWC2 block size C2 and where the number comes from.

    Raises LayoutError when the output table has no NC1HWC2 row for that precision (for example
    float16 on RV1103/RV1106 or int8 on RK2118): the seed says the layout is not offered there.
    """
    platform = platform_of(target)
    row = output_row(target, precision=precision, rank=4, layout="NC1HWC2")
    known = _C2_USER_GUIDE.get((platform, precision))
    if known is not None:
        return known, C2_USER_GUIDE_SOURCE
    return row.channel_align_conv // 2, C2_DERIVED_SOURCE


# --------------------------------------------------------------------------------------------
# §2 Convolution width limits
# --------------------------------------------------------------------------------------------


def dilated_kernel(k: int, dilation: int) -> int:
    """``dilated_kernel = kernel * dilation - dilation + 1`` (the seed's special notes)."""
    return k * dilation - dilation + 1


@dataclass(frozen=True)
class NFormula:
    """``N = c - MAX(CEIL(K / d), floor)`` with ``K = dilated_kh * dilated_kw``.

    ``floor == 0`` stands for the seed's plain ``N = c - CEIL(K / d)`` (K >= 1, so CEIL >= 1 and the
    MAX never binds).
    """

    c: int
    d: int
    floor: int = 0

    def text(self, k: str = "K") -> str:
        ceil = f"CEIL({k}/{self.d})"
        return f"{self.c} - MAX({ceil}, {self.floor})" if self.floor else f"{self.c} - {ceil}"


@dataclass(frozen=True)
class ConvRule:
    """One width-limit rule (A or B) of a platform.

    Condition (1): ``width * dilated_kernel_h < base * N`` when ``strict`` (RK3566/RK3568), else
    ``<=``. Condition (2): ``width <= max_width``. N per convolution kind.
    """

    platform: str
    rule: WidthRule
    base: int
    strict: bool
    max_width: int
    conv: NFormula
    depthwise: NFormula
    deconv: NFormula

    def formula(self, kind: str) -> NFormula:
        check_choice("convolution kind", kind, CONV_KINDS)
        return {"conv": self.conv, "depthwise": self.depthwise, "deconv": self.deconv}[kind]

    def condition1_text(self) -> str:
        return f"width*dkh {'<' if self.strict else '<='} {self.base}*N"


# The seed states N is an integer from 1 to 7, but the formulas are kept as written: RK3588's
# give up to 12 - 3 = 9 (sic) and RK3576/RV1126B rule B deconvolution starts from 12 (sic). Only
# N < 1 is treated as unsupported.
CONV_RULES: tuple[ConvRule, ...] = (
    # RK3566/RK3568: strict "<" in (1), base 1024, no MAX floor.
    ConvRule(
        RK3566_RK3568, "A", 1024, True, 4096, NFormula(8, 128), NFormula(8, 4096), NFormula(8, 128)
    ),
    ConvRule(
        RK3566_RK3568, "B", 1024, True, 4096, NFormula(8, 128), NFormula(8, 4096), NFormula(8, 128)
    ),
    # RK3588: max width 8192; rule B has base 1024 where rule A has 2048.
    ConvRule(
        RK3588,
        "A",
        2048,
        False,
        8192,
        NFormula(12, 128, 3),
        NFormula(12, 2048, 3),
        NFormula(12, 128, 3),
    ),
    ConvRule(
        RK3588,
        "B",
        1024,
        False,
        8192,
        NFormula(12, 128, 3),
        NFormula(12, 2048, 3),
        NFormula(12, 128, 3),
    ),
    ConvRule(
        RV1103_RV1106,
        "A",
        2048,
        False,
        4096,
        NFormula(8, 128, 2),
        NFormula(8, 4096),
        NFormula(8, 128, 2),
    ),
    ConvRule(
        RK3562, "A", 2048, False, 4096, NFormula(8, 128, 2), NFormula(8, 4096), NFormula(8, 128, 2)
    ),
    ConvRule(
        RK3562, "B", 2048, False, 4096, NFormula(8, 128, 2), NFormula(8, 4096), NFormula(8, 128, 2)
    ),
    # RK3576/RV1126B: depthwise divides by 2048; rule B depthwise has floor 3 and rule B
    # deconvolution uses 12 (sic).
    ConvRule(
        RK3576_RV1126B,
        "A",
        2048,
        False,
        4096,
        NFormula(8, 128, 2),
        NFormula(8, 2048),
        NFormula(8, 128, 2),
    ),
    ConvRule(
        RK3576_RV1126B,
        "B",
        2048,
        False,
        4096,
        NFormula(8, 128, 2),
        NFormula(8, 2048, 3),
        NFormula(12, 128, 2),
    ),
    ConvRule(
        RK2118, "A", 2048, False, 4096, NFormula(8, 128, 2), NFormula(8, 4096), NFormula(8, 128, 2)
    ),
    ConvRule(
        RV1103B_RV1106B,
        "A",
        2048,
        False,
        4096,
        NFormula(8, 128, 2),
        NFormula(8, 4096),
        NFormula(8, 128, 2),
    ),
)


def conv_rules(target: str) -> tuple[ConvRule, ...]:
    """The width-limit rules the seed defines for the target's platform (A, and B where listed)."""
    platform = platform_of(target)
    return tuple(rule for rule in CONV_RULES if rule.platform == platform)


def conv_rule(target: str, rule: str) -> ConvRule:
    """One rule of the target's platform; LayoutError when the seed does not define it there."""
    rules = conv_rules(target)
    for candidate in rules:
        if candidate.rule == rule:
            return candidate
    listed = ", ".join(r.rule for r in rules)
    raise LayoutError(
        f"{target}: convolution width rule: expected one of {listed} "
        f"({rules[0].platform} lists rule{'s' if len(rules) > 1 else ''} {listed}), got {rule!r}"
    )
