"""Convolution width limits: does a convolution of this width and kernel fit the NPU's rule?

The numbers come from the seed tables in :mod:`npu_hil.targets.rockchip` (RKNN2 V2.5.0, rules A and
B). Only Rockchip's seed gives such limits; for the other targets the check says so and passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from npu_hil.harness.errors import LayoutError
from npu_hil.targets import rockchip

__all__ = ["NO_CONV_LIMIT_TARGETS", "ConvCheck", "ConvCondition", "check_conv"]

#: Targets whose seeds state no convolution width limits.
NO_CONV_LIMIT_TARGETS: tuple[str, ...] = ("kl730", "rdk-x3", "rdk-x5", "rdk-s100")

ConditionName = Literal["(1)", "(2)", "N"]


@dataclass(frozen=True)
class ConvCondition:
    """One condition of a width rule, evaluated, with the numbers in ``text``."""

    name: ConditionName
    ok: bool
    text: str


@dataclass(frozen=True)
class ConvCheck:
    """The outcome of :func:`check_conv`.

    ``failed`` names the conditions that do not hold, in the order of ``conditions``. When N < 1
    the convolution is unsupported outright and condition (1), which needs a valid N, is not
    evaluated (it is left out of ``conditions``).
    """

    ok: bool
    n: int | None
    rule: str | None
    kind: str
    width: int
    dilated_kernel_hw: tuple[int, int]
    conditions: tuple[ConvCondition, ...]
    failed: tuple[str, ...]
    message: str


def _positive_pair(name: str, value: object) -> tuple[int, int]:
    if (
        isinstance(value, tuple | list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        return int(value[0]), int(value[1])
    raise LayoutError(f"{name}: expected two positive integers (h, w), got {value!r}")


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _default_rule(target: str, first_layer: str) -> tuple[str, str]:
    """The rule from the input table's rank-4 rows for that first layer, plus a note when the
    platform lists no such rows but has only one rule (RK2118 float16-only, RV1103/RV1106)."""
    rows = [
        row
        for row in rockchip.input_rows(target)
        if row.rank4 and row.first_layer == first_layer and row.width_rule is not None
    ]
    rules = sorted({row.width_rule for row in rows if row.width_rule is not None})
    if len(rules) == 1:
        return rules[0], ""
    defined = rockchip.conv_rules(target)
    platform = rockchip.platform_of(target)
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
    dilation_hw: tuple[int, int] = (1, 1),
    kind: str = "conv",
    rule: str | None = None,
    first_layer: str = "int8",
) -> ConvCheck:
    """Check a convolution's input width and kernel against the target's width-limit rule.

    ``kind`` is "conv", "depthwise" or "deconv". ``rule`` ("A"/"B") defaults to the rule the input
    table gives for ``first_layer`` (int8 -> A, float16 -> B where B exists). The rule holds when
    N >= 1 and conditions (1) and (2) both hold. N is computed as the seed writes it; the source
    says 1..7, but RK3588 can give 9 (sic), and only N < 1 is refused.
    """
    known = (*rockchip.TARGETS, *NO_CONV_LIMIT_TARGETS)
    if not isinstance(target, str) or target not in known:
        raise LayoutError(f"unknown target {target!r}: expected one of {', '.join(known)}")
    if isinstance(width, bool) or not isinstance(width, int) or width <= 0:
        raise LayoutError(f"width: expected a positive integer, got {width!r}")
    kh, kw = _positive_pair("kernel_hw", kernel_hw)
    dh, dw = _positive_pair("dilation_hw", dilation_hw)
    if kind not in rockchip.CONV_KINDS:
        raise LayoutError(
            f"convolution kind: expected one of {', '.join(rockchip.CONV_KINDS)}, got {kind!r}"
        )
    if first_layer not in rockchip.PRECISIONS:
        raise LayoutError(
            f"first_layer: expected one of {', '.join(rockchip.PRECISIONS)}, got {first_layer!r}"
        )
    dkh = rockchip.dilated_kernel(kh, dh)
    dkw = rockchip.dilated_kernel(kw, dw)
    shape = f"width {width}, kernel {kh}x{kw}, dilation {dh}x{dw} (dilated {dkh}x{dkw})"

    if target in NO_CONV_LIMIT_TARGETS:
        return ConvCheck(
            ok=True,
            n=None,
            rule=None,
            kind=kind,
            width=width,
            dilated_kernel_hw=(dkh, dkw),
            conditions=(),
            failed=(),
            message=f"{target} {kind}, {shape}: the seeds give no convolution width limits "
            f"for {target}; nothing to check",
        )

    note = ""
    if rule is None:
        rule, note = _default_rule(target, first_layer)
    spec = rockchip.conv_rule(target, rule)
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
