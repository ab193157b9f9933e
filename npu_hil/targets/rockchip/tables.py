"""Rockchip RKNN2 (V2.5.0): the seed's tables as data, plus lookups: §1 model inputs, §2 the
convolution width limits (rules A and B, checked by :func:`seed_check`), §3 model outputs, the
NC1HWC2 block size C2, and the tables of one target as text (``npu-hil targets show``).

Source: ``seeds/002_0de9e292831d3a07.txt`` (the authority) and its English rendering
``spec/rknn2-io-constraints.md``. Every row below is one row of the seed with its merged cells
expanded. Quirks of the source are kept as written and marked ``sic``; nothing here "fixes" them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from npu_hil.harness.errors import LayoutError

# One list of precisions for every unit (npu_hil.targets.conv), named here too.
from npu_hil.targets.conv import PRECISIONS as PRECISIONS
from npu_hil.targets.conv import ConvCheck, ConvCondition, dilated_kernel
from npu_hil.targets.tables import text_table

FirstLayer = Literal["int8", "float16", "any"]
Precision = Literal["int8", "float16", "any"]
Executor = Literal["NPU", "CPU"]
WidthRule = Literal["A", "B"]

# --------------------------------------------------------------------------------------------
# Targets and the seed's platform groups
# --------------------------------------------------------------------------------------------

RK3566_RK3568 = "RK3566/RK3568"
RK3588 = "RK3588"
RV1103_RV1106 = "RV1103/RV1106"
RK3562 = "RK3562"
RK3576_RV1126B = "RK3576/RV1126B"
RK2118 = "RK2118"
RV1103B_RV1106B = "RV1103B/RV1106B"

#: The seed's table groups, in the seed's order.
PLATFORMS: tuple[str, ...] = (
    RK3566_RK3568,
    RK3588,
    RV1103_RV1106,
    RK3562,
    RK3576_RV1126B,
    RK2118,
    RV1103B_RV1106B,
)

#: Target name (as used on the command line and in markers) -> the seed's table group.
PLATFORM_OF: dict[str, str] = {
    "rk3566": RK3566_RK3568,
    "rk3568": RK3566_RK3568,
    "rk3588": RK3588,
    "rk3562": RK3562,
    "rv1103": RV1103_RV1106,
    "rv1106": RV1103_RV1106,
    "rk3576": RK3576_RV1126B,
    "rv1126b": RK3576_RV1126B,
    "rk2118": RK2118,
    "rv1103b": RV1103B_RV1106B,
    "rv1106b": RV1103B_RV1106B,
}

TARGETS: tuple[str, ...] = tuple(PLATFORM_OF)

#: Declared input types as the input table distinguishes them; "other" is the seed's
#: "other types (input alignment may change)".
INPUT_TYPES: tuple[str, ...] = ("uint8", "int8", "float16", "other")
LAYOUTS: tuple[str, ...] = ("NCHW", "NHWC", "NC1HWC2", "UNDEFINE")


def platform_of(target: str) -> str:
    """The seed's table group for a Rockchip target name; LayoutError for anything else."""
    try:
        return PLATFORM_OF[target]
    except (KeyError, TypeError):
        raise LayoutError(
            f"unknown Rockchip target {target!r}: expected one of {', '.join(TARGETS)}"
        ) from None


# --------------------------------------------------------------------------------------------
# §1 Model inputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputRow:
    """One row of the input table (zero-copy API only).

    ``input_types`` is the declared input type of the first layer: a set drawn from
    ``INPUT_TYPES``, or ``"any"`` where the seed says "no restriction". ``width_rule`` is the
    convolution width rule for channel in {1,3,4}; None where the seed says "no restriction". For
    other channel counts every row of the seed says "no restriction".
    """

    platform: str
    first_layer: FirstLayer
    rank4: bool
    input_types: frozenset[str] | Literal["any"]
    mean_scale_on: Executor
    width_align_c134: int
    width_align_other: int
    width_rule: WidthRule | None

    def accepts(self, first_layer: str, rank: int, input_type: str) -> bool:
        """Whether this row covers the (first layer, rank, declared input type) combination."""
        return (
            (self.first_layer == "any" or self.first_layer == first_layer)
            and self.rank4 == (rank == 4)
            and (self.input_types == "any" or input_type in self.input_types)
        )

    def width_align(self, channels: int) -> int:
        """The width alignment in elements for this channel count (the seed's two columns)."""
        return self.width_align_c134 if channels in (1, 3, 4) else self.width_align_other

    def input_types_text(self) -> str:
        if self.input_types == "any":
            return "any"
        return "/".join(t for t in INPUT_TYPES if t in self.input_types)


def _inputs(
    platform: str,
    first_layer: FirstLayer,
    rank4: bool,
    rows: Iterable[tuple[str, Executor]],
    align_c134: int,
    align_other: int,
    rule: WidthRule | None,
) -> tuple[InputRow, ...]:
    """One InputRow per seed row; rows sharing the merged cells are given as (type, executor)."""
    return tuple(
        InputRow(
            platform=platform,
            first_layer=first_layer,
            rank4=rank4,
            input_types="any" if input_type == "any" else frozenset({input_type}),
            mean_scale_on=executor,
            width_align_c134=align_c134,
            width_align_other=align_other,
            width_rule=rule,
        )
        for input_type, executor in rows
    )


# The int8 first-layer block repeated by most platforms: uint8/int8 are normalised on the NPU,
# float16 and other declared types on the CPU.
_INT8_FIRST: tuple[tuple[str, Executor], ...] = (
    ("uint8", "NPU"),
    ("int8", "NPU"),
    ("float16", "CPU"),
    ("other", "CPU"),
)
# A float16 first layer has no quant step (general note 6); the seed puts everything on the CPU.
_FLOAT16_FIRST: tuple[tuple[str, Executor], ...] = (
    ("uint8", "CPU"),
    ("int8", "CPU"),
    ("float16", "CPU"),
    ("other", "CPU"),
)
_ANY: tuple[tuple[str, Executor], ...] = (("any", "CPU"),)

INPUT_ROWS: tuple[InputRow, ...] = (
    *_inputs(RK3566_RK3568, "int8", True, _INT8_FIRST, 8, 1, "A"),
    *_inputs(RK3566_RK3568, "float16", True, _FLOAT16_FIRST, 4, 1, "B"),
    *_inputs(RK3566_RK3568, "any", False, _ANY, 1, 1, None),
    *_inputs(RK3588, "int8", True, _INT8_FIRST, 16, 1, "A"),
    *_inputs(RK3588, "float16", True, _FLOAT16_FIRST, 8, 1, "B"),
    *_inputs(RK3588, "any", False, _ANY, 1, 1, None),
    # RV1103/RV1106 lists a single row; everything else is unsupported there.
    *_inputs(RV1103_RV1106, "int8", True, (("uint8", "NPU"),), 16, 1, "A"),
    *_inputs(RK3562, "int8", True, _INT8_FIRST, 16, 1, "A"),
    *_inputs(RK3562, "float16", True, _FLOAT16_FIRST, 8, 1, "B"),
    *_inputs(RK3562, "any", False, _ANY, 1, 1, None),
    *_inputs(RK3576_RV1126B, "int8", True, _INT8_FIRST, 16, 1, "A"),
    *_inputs(RK3576_RV1126B, "float16", True, _FLOAT16_FIRST, 8, 1, "B"),
    *_inputs(RK3576_RV1126B, "any", False, _ANY, 1, 1, None),
    # RK2118 has float16 rows only. Its non-4-D row keeps width rule A and a float16 input type
    # (sic: every other platform's non-4-D row says "no restriction" there).
    *_inputs(RK2118, "float16", True, (("float16", "CPU"),), 4, 1, "A"),
    *_inputs(RK2118, "float16", False, (("float16", "CPU"),), 1, 1, "A"),
    *_inputs(RV1103B_RV1106B, "int8", True, (("uint8", "NPU"), ("int8", "NPU")), 8, 1, "A"),
)


def input_type_of(dtype_name: str) -> str:
    """The input table's type column for a numpy dtype name: uint8, int8 and float16 are listed by
    name, everything else (float32, int16, ...) falls under "other types"."""
    return dtype_name if dtype_name in ("uint8", "int8", "float16") else "other"


def input_rows(target: str) -> tuple[InputRow, ...]:
    """All input rows of the target's platform, in the seed's order."""
    platform = platform_of(target)
    return tuple(row for row in INPUT_ROWS if row.platform == platform)


def _listing(entries: Iterable[tuple[str, bool, str]], key_name: str, col: str) -> str:
    """What a platform lists, ``(key, rank 4, value)`` per row, grouped by key and rank."""
    groups: dict[tuple[str, bool], list[str]] = {}
    for key, rank4, value in entries:
        groups.setdefault((key, rank4), []).append(value)
    return "; ".join(
        f"{key_name}={key} {'rank 4' if rank4 else 'rank not 4'} {col} {'/'.join(values)}"
        for (key, rank4), values in groups.items()
    )


def check_choice(what: str, value: object, choices: Iterable[str], hint: str = "") -> None:
    options = tuple(choices)
    if not isinstance(value, str) or value not in options:
        raise LayoutError(f"{what}: expected one of {', '.join(options)}, got {value!r}{hint}")


def _check_rank(rank: object) -> int:
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise LayoutError(f"rank: expected a non-negative integer, got {rank!r}")
    return rank


def input_row(target: str, *, first_layer: str, rank: int, input_type: str) -> InputRow:
    """The input-table row for a first-layer precision, an input rank and a declared input type.

    ``input_type`` is one of uint8/int8/float16/other (see :func:`input_type_of`). Raises
    LayoutError naming the missing combination and what the platform does list.
    """
    platform = platform_of(target)
    check_choice("first_layer", first_layer, PRECISIONS)
    check_choice("input_type", input_type, INPUT_TYPES, " (map dtype names with input_type_of())")
    _check_rank(rank)
    rows = input_rows(target)
    for row in rows:
        if row.accepts(first_layer, rank, input_type):
            return row
    listed = _listing(
        ((r.first_layer, r.rank4, r.input_types_text()) for r in rows), "first_layer", "input"
    )
    raise LayoutError(
        f"{target}: no input row for first_layer={first_layer}, input type {input_type}, "
        f"rank {rank} ({platform} lists: {listed})"
    )


def default_first_layer(target: str) -> str:
    """ "int8" where the platform has int8 first-layer rows, else "float16" (RK2118)."""
    rows = input_rows(target)
    return "int8" if any(row.first_layer == "int8" for row in rows) else "float16"


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


# --------------------------------------------------------------------------------------------
# §3 Model outputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutputRow:
    """One row of the output table. Alignments are "multiple of"; the seed's "none" is 1.

    ``channel_align_conv`` applies when the model's last layer is a convolution and
    ``channel_align_other`` otherwise; rows with a single channel figure carry it in both.
    """

    platform: str
    precision: Precision
    rank4: bool
    layouts: frozenset[str]
    channel_align_conv: int
    channel_align_other: int
    hw_align: int

    def accepts(self, precision: str, rank: int, layout: str) -> bool:
        return (
            (self.precision == "any" or self.precision == precision)
            and self.rank4 == (rank == 4)
            and layout in self.layouts
        )

    def channel_align(self, last_layer_conv: bool) -> int:
        return self.channel_align_conv if last_layer_conv else self.channel_align_other

    def layouts_text(self) -> str:
        return "/".join(name for name in LAYOUTS if name in self.layouts)


def _out(
    platform: str,
    precision: Precision,
    rank4: bool,
    layout: str,
    channel_conv: int = 1,
    channel_other: int | None = None,
    hw: int = 1,
) -> OutputRow:
    return OutputRow(
        platform=platform,
        precision=precision,
        rank4=rank4,
        layouts=frozenset({layout}),
        channel_align_conv=channel_conv,
        channel_align_other=channel_conv if channel_other is None else channel_other,
        hw_align=hw,
    )


def _four(platform: str, precision: Precision, nhwc: int, conv: int, other: int) -> list[OutputRow]:
    """A precision's four rank-4 rows where the platform lists them all: NCHW, NHWC (channels x
    ``nhwc``), NC1HWC2 (x ``conv`` after a convolution, else x ``other``; H*W x4), UNDEFINE."""
    return [
        _out(platform, precision, True, "NCHW"),
        _out(platform, precision, True, "NHWC", nhwc),
        _out(platform, precision, True, "NC1HWC2", conv, other, hw=4),
        _out(platform, precision, True, "UNDEFINE"),
    ]


OUTPUT_ROWS: tuple[OutputRow, ...] = (
    *_four(RK3566_RK3568, "int8", 8, 16, 8),
    *_four(RK3566_RK3568, "float16", 4, 8, 4),
    _out(RK3566_RK3568, "any", False, "UNDEFINE"),
    *_four(RK3588, "int8", 16, 32, 16),
    *_four(RK3588, "float16", 8, 16, 8),
    _out(RK3588, "any", False, "UNDEFINE"),
    # RV1103/RV1106: int8 only, no NCHW, no float16, no non-4-D row.
    _out(RV1103_RV1106, "int8", True, "NC1HWC2", 32, 16, hw=4),
    _out(RV1103_RV1106, "int8", True, "NHWC"),
    *_four(RK3562, "int8", 1, 32, 16),
    *_four(RK3562, "float16", 1, 16, 8),
    _out(RK3562, "any", False, "UNDEFINE"),
    *_four(RK3576_RV1126B, "int8", 1, 32, 16),
    *_four(RK3576_RV1126B, "float16", 1, 16, 8),
    _out(RK3576_RV1126B, "any", False, "UNDEFINE"),
    # RK2118: float16 only.
    _out(RK2118, "float16", True, "NC1HWC2", 8, 4, hw=4),
    _out(RK2118, "float16", True, "NHWC"),
    _out(RK2118, "float16", False, "UNDEFINE"),
    # RV1103B/RV1106B: sic, the last-layer-conv multiple equals the other-ops multiple (8 and 8).
    _out(RV1103B_RV1106B, "int8", True, "NC1HWC2", 8, 8, hw=4),
    _out(RV1103B_RV1106B, "int8", True, "NHWC"),
)


def precision_of(dtype_name: str) -> str:
    """The output table's precision for a dtype name: int8/uint8 -> "int8", float16 -> "float16".

    The table only knows those two (note 2: the original type of the last layer's output).
    """
    if dtype_name in ("int8", "uint8"):
        return "int8"
    if dtype_name == "float16":
        return "float16"
    raise LayoutError(
        f"output precision: expected a dtype of int8, uint8 or float16 (the RKNN2 output table "
        f"lists int8 and float16 precisions), got {dtype_name!r}"
    )


def output_rows(target: str) -> tuple[OutputRow, ...]:
    """All output rows of the target's platform, in the seed's order."""
    platform = platform_of(target)
    return tuple(row for row in OUTPUT_ROWS if row.platform == platform)


def output_row(target: str, *, precision: str, rank: int, layout: str) -> OutputRow:
    """The output-table row for an output precision, rank and layout; LayoutError if unlisted."""
    platform = platform_of(target)
    check_choice("precision", precision, PRECISIONS, " (map dtype names with precision_of())")
    check_choice("layout", layout, LAYOUTS)
    _check_rank(rank)
    rows = output_rows(target)
    for row in rows:
        if row.accepts(precision, rank, layout):
            return row
    listed = _listing(
        ((r.precision, r.rank4, r.layouts_text()) for r in rows), "precision", "layout"
    )
    raise LayoutError(
        f"{target}: no output row for precision={precision}, rank {rank}, layout {layout} "
        f"({platform} lists: {listed})"
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
# The tables of one target as text
# --------------------------------------------------------------------------------------------


def _align_text(value: int) -> str:
    return "none" if value == 1 else f"x{value}"


def tables_text(target: str) -> str:
    """The target's input, output and convolution tables as fixed-width text."""
    platform = platform_of(target)
    lines = [f"{target}: RKNN2 V2.5.0 table group {platform} (zero-copy API)", "", "Inputs"]
    lines += text_table(
        (
            "first layer",
            "rank",
            "input type",
            "mean/scale/quant",
            "w-align C=1,3,4",
            "w-align other C",
            "width rule C=1,3,4",
        ),
        (
            (
                row.first_layer,
                "4" if row.rank4 else "not 4",
                row.input_types_text(),
                row.mean_scale_on,
                str(row.width_align_c134),
                str(row.width_align_other),
                row.width_rule or "none",
            )
            for row in input_rows(target)
        ),
    )
    lines.append("(other channel counts: no width limit)")
    lines += ["", "Convolution width limits (K = dkh*dkw, dkh = dilated kernel height)"]
    lines += text_table(
        ("rule", "(1)", "(2)", "conv N", "depthwise N", "deconv N"),
        (
            (
                rule.rule,
                rule.condition1_text(),
                f"width <= {rule.max_width}",
                rule.conv.text(),
                rule.depthwise.text(),
                rule.deconv.text(),
            )
            for rule in conv_rules(target)
        ),
    )
    lines += ["", "Outputs"]
    lines += text_table(
        ("precision", "rank", "layout", "C-align last conv", "C-align other", "HW-align"),
        (
            (
                row.precision,
                "4" if row.rank4 else "not 4",
                row.layouts_text(),
                _align_text(row.channel_align_conv),
                _align_text(row.channel_align_other),
                _align_text(row.hw_align),
            )
            for row in output_rows(target)
        ),
    )
    c2_lines = []
    for precision in PRECISIONS:
        try:
            c2, source = c2_default(target, precision)
        except LayoutError:
            continue
        c2_lines.append(f"  {precision}: C2 = {c2} ({source})")
    if c2_lines:
        lines += ["", "NC1HWC2 block C2 (prediction; the device's reported native dims win)"]
        lines += c2_lines
    return "\n".join(lines) + "\n"
