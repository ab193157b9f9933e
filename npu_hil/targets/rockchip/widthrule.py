"""RKNN2's convolution width limits (rules A and B of the seed, V2.5.0): does a convolution of
this width and kernel fit the NPU's rule? The Rockchip unit's ``check_conv`` hook, reached through
:func:`npu_hil.targets.conv.check_conv`, which checks the arguments first. Where the compiler's
own limit was measured for the convolution's site (:mod:`npu_hil.targets.rockchip.measuredwidths`),
the measurement decides and the seed's verdict is kept beside it.
"""

from __future__ import annotations

from npu_hil.harness.errors import LayoutError
from npu_hil.targets.conv import ConvCheck, ConvCondition, ConvSite
from npu_hil.targets.rockchip.convolution import conv_rule, conv_rules, dilated_kernel
from npu_hil.targets.rockchip.measuredwidths import measured_verdict
from npu_hil.targets.rockchip.tables import input_rows, platform_of

__all__ = ["check_conv", "seed_check"]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


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
    site: ConvSite | None = None,
) -> ConvCheck:
    """The compiler's measured limit where one covers the convolution's ``site``, the seed's
    verdict beside it; else the seed's rule (:func:`seed_check`)."""
    seed = seed_check(target, width, kernel_hw, dilation_hw, kind, rule, first_layer)
    measured = measured_verdict(
        target, width, kernel_hw, dilation_hw, kind, first_layer, site or ConvSite()
    )
    if measured is None:
        return seed
    condition = ConvCondition("measured", measured.ok, measured.text)
    seed_says = "supported" if seed.ok else f"unsupported, fails {', '.join(seed.failed)}"
    verdict = "supported" if measured.ok else "unsupported"
    return ConvCheck(
        ok=measured.ok,
        n=seed.n,
        rule=seed.rule,
        kind=kind,
        width=width,
        dilated_kernel_hw=seed.dilated_kernel_hw,
        conditions=(condition,),
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
    dkh = dilated_kernel(kh, dh)
    dkw = dilated_kernel(kw, dw)
    shape = f"width {width}, kernel {kh}x{kw}, dilation {dh}x{dw} (dilated {dkh}x{dkw})"

    note = ""
    if rule is None:
        rule, note = _default_rule(target, first_layer)
    spec = conv_rule(target, rule)
    where = f"{spec.platform} rule {spec.rule} {kind}"

    formula = spec.formula(kind)
    k = dkh * dkw
    ceil = _ceil_div(k, formula.d)
    n = formula.c - max(ceil, formula.floor)
    if formula.floor:
        n_steps = f"{formula.c} - MAX({ceil}, {formula.floor})"
    else:
        n_steps = f"{formula.c} - {ceil}"
    n_ok = n >= 1
    n_text = (
        f"N = {formula.text()} = {formula.text(f'{dkh}*{dkw}')} = {n_steps} = {n}"
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
