"""RKNN2 V2.5.0 (seed ``seeds/002_0de9e292831d3a07.txt``): the NC1HWC2 block size C2 and the
convolution width limits (§2, rules A and B) as data, and the unit's ``check_conv`` hook (behind
:func:`npu_hil.targets.conv.check_conv`, which checks the arguments), where a measured limit
(:mod:`.measuredwidths`) decides over the seed's."""

from __future__ import annotations

from dataclasses import dataclass

from npu_hil.harness.errors import LayoutError
from npu_hil.targets.conv import ConvCheck, ConvCondition, ConvSite, dilated_kernel
from npu_hil.targets.rockchip.measuredwidths import measured_verdict
from npu_hil.targets.rockchip.tables import (
    RK2118,
    RK3562,
    RK3566_RK3568,
    RK3576_RV1126B,
    RK3588,
    RV1103_RV1106,
    RV1103B_RV1106B,
    WidthRule,
    input_rows,
    output_row,
    platform_of,
)

# --------------------------------------------------------------------------------------------
# NC1HWC2 block size C2
# --------------------------------------------------------------------------------------------

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
        return known, "RKNPU User Guide v1.5.2 table 4-6"
    return row.channel_align_conv // 2, "derived: half the seed's last-layer-conv channel multiple"


# --------------------------------------------------------------------------------------------
# §2 Convolution width limits
# --------------------------------------------------------------------------------------------


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
        return self.steps(f"CEIL({k}/{self.d})")

    def steps(self, ceil: str) -> str:
        """The formula with the ceiling written as ``ceil``."""
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
        return {"conv": self.conv, "depthwise": self.depthwise, "deconv": self.deconv}[kind]

    def condition1_text(self) -> str:
        return f"width*dkh {'<' if self.strict else '<='} {self.base}*N"


# The seed states N is an integer from 1 to 7, but the formulas are kept as written: RK3588's
# give up to 12 - 3 = 9 (sic) and RK3576/RV1126B rule B deconvolution starts from 12 (sic). Only
# N < 1 is treated as unsupported.
_N = NFormula

CONV_RULES: tuple[ConvRule, ...] = (
    # RK3566/RK3568: strict "<" in (1), base 1024, no MAX floor.
    ConvRule(RK3566_RK3568, "A", 1024, True, 4096, _N(8, 128), _N(8, 4096), _N(8, 128)),
    ConvRule(RK3566_RK3568, "B", 1024, True, 4096, _N(8, 128), _N(8, 4096), _N(8, 128)),
    # RK3588: max width 8192; rule B has base 1024 where rule A has 2048.
    ConvRule(RK3588, "A", 2048, False, 8192, _N(12, 128, 3), _N(12, 2048, 3), _N(12, 128, 3)),
    ConvRule(RK3588, "B", 1024, False, 8192, _N(12, 128, 3), _N(12, 2048, 3), _N(12, 128, 3)),
    ConvRule(RV1103_RV1106, "A", 2048, False, 4096, _N(8, 128, 2), _N(8, 4096), _N(8, 128, 2)),
    ConvRule(RK3562, "A", 2048, False, 4096, _N(8, 128, 2), _N(8, 4096), _N(8, 128, 2)),
    ConvRule(RK3562, "B", 2048, False, 4096, _N(8, 128, 2), _N(8, 4096), _N(8, 128, 2)),
    # RK3576/RV1126B: depthwise divides by 2048; rule B depthwise has floor 3 and rule B
    # deconvolution uses 12 (sic).
    ConvRule(RK3576_RV1126B, "A", 2048, False, 4096, _N(8, 128, 2), _N(8, 2048), _N(8, 128, 2)),
    ConvRule(RK3576_RV1126B, "B", 2048, False, 4096, _N(8, 128, 2), _N(8, 2048, 3), _N(12, 128, 2)),
    ConvRule(RK2118, "A", 2048, False, 4096, _N(8, 128, 2), _N(8, 4096), _N(8, 128, 2)),
    ConvRule(RV1103B_RV1106B, "A", 2048, False, 4096, _N(8, 128, 2), _N(8, 4096), _N(8, 128, 2)),
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


def _default_rule(target: str, first_layer: str) -> tuple[str, str]:
    """The rule from the input table's rank-4 rows for that first layer, plus a note when the
    platform lists no such rows but has only one rule (RK2118 float16-only, RV1103/RV1106)."""
    rows = [
        row
        for row in input_rows(target)
        if row.rank4 and row.first_layer == first_layer and row.width_rule is not None
    ]
    rules = sorted({row.width_rule for row in rows if row.width_rule is not None})
    if len(rules) == 1:
        return rules[0], ""
    defined = conv_rules(target)
    platform = platform_of(target)
    if not rows and len(defined) == 1:
        only = defined[0].rule
        return only, (
            f" ({platform} lists no rank-4 first_layer={first_layer} input rows; "
            f"its only width rule is {only})"
        )
    raise LayoutError(
        f"{target}: cannot pick a width rule for first_layer={first_layer}: expected rank-4 "
        f"input rows with one rule, found {rules or 'none'}; "
        f"pass rule= explicitly ({platform} defines rules "
        f"{', '.join(r.rule for r in defined)})"
    )


def _op(ok: bool, strict: bool) -> str:
    if strict:
        return "<" if ok else ">="
    return "<=" if ok else ">"


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


def seed_check(
    target: str,
    width: int,
    kernel_hw: tuple[int, int],
    dilation_hw: tuple[int, int],
    kind: str,
    rule: str | None,
    first_layer: str,
) -> ConvCheck:
    """The seed's width rule for a Rockchip ``target``: it holds when N >= 1 and conditions (1)
    and (2) both hold. ``rule`` ("A"/"B") defaults to the rule the input table gives for
    ``first_layer`` (int8 -> A, float16 -> B where B exists). N is computed as the seed writes it;
    the source says 1..7, but RK3588 can give 9 (sic), and only N < 1 is refused."""
    (kh, kw), (dh, dw) = kernel_hw, dilation_hw
    dkh, dkw = dilated_kernel(kh, dh), dilated_kernel(kw, dw)
    shape = f"width {width}, kernel {kh}x{kw}, dilation {dh}x{dw} (dilated {dkh}x{dkw})"

    note = ""
    if rule is None:
        rule, note = _default_rule(target, first_layer)
    spec = conv_rule(target, rule)
    where = f"{spec.platform} rule {spec.rule} {kind}"

    formula = spec.formula(kind)
    k = dkh * dkw
    ceil = -(-k // formula.d)
    n = formula.c - max(ceil, formula.floor)
    n_ok = n >= 1
    n_text = (
        f"N = {formula.text()} = {formula.text(f'{dkh}*{dkw}')} = {formula.steps(str(ceil))} = {n}"
        f"{'' if n_ok else ' < 1: unsupported'} [{where}]"
    )

    conditions: list[ConvCondition] = []
    if n_ok:
        lhs = width * dkh
        rhs = spec.base * n
        ok1 = lhs < rhs if spec.strict else lhs <= rhs
        conditions.append(
            ConvCondition(
                "(1)",
                ok1,
                f"(1) width·dkh = {width}·{dkh} = {lhs} {_op(ok1, spec.strict)} "
                f"{spec.base}·N = {spec.base}·{n} = {rhs} [{where}]",
            )
        )
    ok2 = width <= spec.max_width
    conditions.append(
        ConvCondition(
            "(2)",
            ok2,
            f"(2) width = {width} {'<=' if ok2 else '>'} {spec.max_width} [{where}]",
        )
    )
    conditions.append(ConvCondition("N", n_ok, n_text))

    failed = tuple(c.name for c in conditions if not c.ok)
    ok = not failed
    verdict = "supported" if ok else f"unsupported, fails {', '.join(failed)}"
    details = "; ".join(c.text for c in conditions if not c.ok) if failed else n_text
    return ConvCheck(
        ok=ok,
        n=n,
        rule=spec.rule,
        kind=kind,
        width=width,
        dilated_kernel_hw=(dkh, dkw),
        conditions=tuple(conditions),
        failed=failed,
        message=f"{target} ({where}), {shape}: {verdict}: {details}{note}",
    )
