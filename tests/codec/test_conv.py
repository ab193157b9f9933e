"""check_conv against the seed's convolution width rules (RKNN2 V2.5.0, rules A and B).

Expected values come from the seed's formulas, transcribed below line by line from
``seeds/002_0de9e292831d3a07.txt`` with ``K`` standing for
``(dilation_kernel_h * dilation_kernel_w)``, and evaluated here by a few lines of test code; the
implementation is never asked for an expectation.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npu_hil.targets
from npu_hil.harness.errors import LayoutError
from npu_hil.targets import ConvCheck, check_conv, rockchip

SEED_CONV = """
RK3566/RK3568
A (1) | width * dilation_kernel_h < 1024 * N
A (2) | width <= 4096
A / Convolution | N = 8 - CEIL(K / 128)
A / Depthwise Convolution | N = 8 - CEIL(K / 4096)
A / ConvTranspose/Deconvolution | N = 8 - CEIL(K / 128)
B (1) | width * dilation_kernel_h < 1024 * N
B (2) | width <= 4096
B / Convolution | N = 8 - CEIL(K / 128)
B / Depthwise Convolution | N = 8 - CEIL(K / 4096)
B / ConvTranspose/Deconvolution | N = 8 - CEIL(K / 128)
RK3588
A (1) | width * dilation_kernel_h <= 2048 * N
A (2) | width <= 8192
A / Convolution | N = 12 - MAX(CEIL(K / 128), 3)
A / Depthwise Convolution | N = 12 - MAX(CEIL(K / 2048), 3)
A / ConvTranspose/Deconvolution | N = 12 - MAX(CEIL(K / 128), 3)
B (1) | width * dilation_kernel_h <= 1024 * N
B (2) | width <= 8192
B / Convolution | N = 12 - MAX(CEIL(K / 128), 3)
B / Depthwise Convolution | N = 12 - MAX(CEIL(K / 2048), 3)
B / ConvTranspose/Deconvolution | N = 12 - MAX(CEIL(K / 128), 3)
RV1103/RV1106
A (1) | width * dilation_kernel_h <= 2048 * N
A (2) | width <= 4096
A / Convolution | N = 8 - MAX(CEIL(K / 128), 2)
A / Depthwise Convolution | N = 8 - CEIL(K / 4096)
A / ConvTranspose/Deconvolution | N = 8 - MAX(CEIL(K / 128), 2)
RK3562
A (1) | width * dilation_kernel_h <= 2048 * N
A (2) | width <= 4096
A / Convolution | N = 8 - MAX(CEIL(K / 128), 2)
A / Depthwise Convolution | N = 8 - CEIL(K / 4096)
A / ConvTranspose/Deconvolution | N = 8 - MAX(CEIL(K / 128), 2)
B (1) | width * dilation_kernel_h <= 2048 * N
B (2) | width <= 4096
B / Convolution | N = 8 - MAX(CEIL(K / 128), 2)
B / Depthwise Convolution | N = 8 - CEIL(K / 4096)
B / ConvTranspose/Deconvolution | N = 8 - MAX(CEIL(K / 128), 2)
RK3576/RV1126B
A (1) | width * dilation_kernel_h <= 2048 * N
A (2) | width <= 4096
A / Convolution | N = 8 - MAX(CEIL(K / 128), 2)
A / Depthwise Convolution | N = 8 - CEIL(K / 2048)
A / ConvTranspose/Deconvolution | N = 8 - MAX(CEIL(K / 128), 2)
B (1) | width * dilation_kernel_h <= 2048 * N
B (2) | width <= 4096
B / Convolution | N = 8 - MAX(CEIL(K / 128), 2)
B / Depthwise Convolution | N = 8 - MAX(CEIL(K / 2048), 3)
B / ConvTranspose/Deconvolution | N = 12 - MAX(CEIL(K / 128), 2)
RK2118
A (1) | width * dilation_kernel_h <= 2048 * N
A (2) | width <= 4096
A / Convolution | N = 8 - MAX(CEIL(K / 128), 2)
A / Depthwise Convolution | N = 8 - CEIL(K / 4096)
A / ConvTranspose/Deconvolution | N = 8 - MAX(CEIL(K / 128), 2)
RV1103B/RV1106B
A (1) | width * dilation_kernel_h <= 2048 * N
A (2) | width <= 4096
A / Convolution | N = 8 - MAX(CEIL(K / 128), 2)
A / Depthwise Convolution | N = 8 - CEIL(K / 4096)
A / ConvTranspose/Deconvolution | N = 8 - MAX(CEIL(K / 128), 2)
"""

KIND_OF = {
    "Convolution": "conv",
    "Depthwise Convolution": "depthwise",
    "ConvTranspose/Deconvolution": "deconv",
}
TARGET_PLATFORM = {
    "rk3566": "RK3566/RK3568",
    "rk3568": "RK3566/RK3568",
    "rk3588": "RK3588",
    "rk3562": "RK3562",
    "rv1103": "RV1103/RV1106",
    "rv1106": "RV1103/RV1106",
    "rk3576": "RK3576/RV1126B",
    "rv1126b": "RK3576/RV1126B",
    "rk2118": "RK2118",
    "rv1103b": "RV1103B/RV1106B",
    "rv1106b": "RV1103B/RV1106B",
}
NO_LIMIT_TARGETS = ("kl730", "rdk-x3", "rdk-x5", "rdk-s100")


@dataclass
class SeedRule:
    platform: str
    rule: str
    strict: bool = False
    base: int = 0
    max_width: int = 0
    # kind -> (c, d, floor); floor 0 for the plain "c - CEIL(K / d)"
    n: dict[str, tuple[int, int, int]] = field(default_factory=dict)


def _parse_seed() -> dict[tuple[str, str], SeedRule]:
    rules: dict[tuple[str, str], SeedRule] = {}
    platform = ""
    for line in SEED_CONV.strip().splitlines():
        if "|" not in line:
            platform = line.strip()
            continue
        left, right = (part.strip() for part in line.split("|"))
        rule = left[0]
        entry = rules.setdefault((platform, rule), SeedRule(platform, rule))
        if m := re.fullmatch(r"width \* dilation_kernel_h (<=|<) (\d+) \* N", right):
            entry.strict, entry.base = m[1] == "<", int(m[2])
        elif m := re.fullmatch(r"width <= (\d+)", right):
            entry.max_width = int(m[1])
        elif m := re.fullmatch(r"N = (\d+) - MAX\(CEIL\(K / (\d+)\), (\d+)\)", right):
            entry.n[KIND_OF[left[4:]]] = (int(m[1]), int(m[2]), int(m[3]))
        elif m := re.fullmatch(r"N = (\d+) - CEIL\(K / (\d+)\)", right):
            entry.n[KIND_OF[left[4:]]] = (int(m[1]), int(m[2]), 0)
        else:  # pragma: no cover - a transcription error
            raise AssertionError(line)
    return rules


SEED = _parse_seed()


def seed_dilated(k: int, d: int) -> int:
    return k * d - d + 1


def seed_n(rule: SeedRule, kind: str, k: int) -> int:
    c, d, floor = rule.n[kind]
    ceil = -(-k // d)
    return c - max(ceil, floor) if floor else c - ceil


def seed_failed(rule: SeedRule, kind: str, width: int, dkh: int, dkw: int) -> tuple[str, ...]:
    n = seed_n(rule, kind, dkh * dkw)
    failed = []
    if n >= 1:
        lhs, rhs = width * dkh, rule.base * n
        if not (lhs < rhs if rule.strict else lhs <= rhs):
            failed.append("(1)")
    if width > rule.max_width:
        failed.append("(2)")
    if n < 1:
        failed.append("N")
    return tuple(failed)


CASES = [
    (target, rule, kind)
    for target, platform in TARGET_PLATFORM.items()
    for (p, rule) in SEED
    if p == platform
    for kind in ("conv", "depthwise", "deconv")
]
CASE_IDS = [f"{t}-{r}-{k}" for t, r, k in CASES]


def seed_rule(target: str, rule: str) -> SeedRule:
    return SEED[(TARGET_PLATFORM[target], rule)]


def test_seed_transcription_is_complete() -> None:
    assert len(SEED) == 11
    for entry in SEED.values():
        assert entry.base in (1024, 2048) and entry.max_width in (4096, 8192)
        assert set(entry.n) == {"conv", "depthwise", "deconv"}


def test_rule_data_is_the_seed() -> None:
    got = {
        (r.platform, r.rule): (
            r.strict,
            r.base,
            r.max_width,
            {
                kind: (f.c, f.d, f.floor)
                for kind, f in (("conv", r.conv), ("depthwise", r.depthwise), ("deconv", r.deconv))
            },
        )
        for r in rockchip.CONV_RULES
    }
    want = {key: (s.strict, s.base, s.max_width, s.n) for key, s in SEED.items()}
    assert got == want


# --------------------------------------------------------------------------------------------
# both sides of every bound, for every target, rule and kind
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("target", "rule", "kind"), CASES, ids=CASE_IDS)
def test_condition_1_flips_at_the_exact_width(target: str, rule: str, kind: str) -> None:
    seed = seed_rule(target, rule)
    # kernel (dkh, 1): find a height that divides base*N so the bound is hit exactly, with the
    # flip below the max width so that (2) stays out of the way.
    for dkh in range(1, 512):
        n = seed_n(seed, kind, dkh)
        if n < 1:
            continue
        bound = seed.base * n
        if bound % dkh == 0 and 2 <= bound // dkh < seed.max_width:
            break
    else:  # pragma: no cover
        raise AssertionError("no kernel height puts the flip of (1) below the max width")
    exact = bound // dkh

    below = check_conv(target, exact - 1, (dkh, 1), kind=kind, rule=rule)
    at = check_conv(target, exact, (dkh, 1), kind=kind, rule=rule)
    above = check_conv(target, exact + 1, (dkh, 1), kind=kind, rule=rule)
    assert (below.n, at.n, above.n) == (n, n, n)
    assert below.ok and below.failed == ()
    # width * dkh == base * N: fails "<" (RK3566/RK3568), passes "<=" (everyone else)
    assert at.ok is (not seed.strict)
    assert at.failed == (("(1)",) if seed.strict else ())
    assert not above.ok and above.failed == ("(1)",)
    assert f"= {exact + 1}·{dkh} = {(exact + 1) * dkh}" in above.conditions[0].text


@pytest.mark.parametrize(("target", "rule", "kind"), CASES, ids=CASE_IDS)
def test_condition_2_flips_at_max_width(target: str, rule: str, kind: str) -> None:
    seed = seed_rule(target, rule)
    n = seed_n(seed, kind, 1)
    assert seed.base * n > seed.max_width + 1, "with a 1x1 kernel (1) holds past the max width"
    edge = check_conv(target, seed.max_width, (1, 1), kind=kind, rule=rule)
    past = check_conv(target, seed.max_width + 1, (1, 1), kind=kind, rule=rule)
    assert edge.ok and edge.failed == () and edge.n == n
    assert not past.ok and past.failed == ("(2)",)
    assert f"(2) width = {seed.max_width + 1} > {seed.max_width}" in past.message


@pytest.mark.parametrize(("target", "rule", "kind"), CASES, ids=CASE_IDS)
def test_n_drops_by_one_past_the_kernel_step(target: str, rule: str, kind: str) -> None:
    seed = seed_rule(target, rule)
    _, d, floor = seed.n[kind]
    # N is flat while CEIL(K/d) <= max(floor, 1), and drops by one at the next K.
    last = max(floor, 1) * d
    plateau = seed_n(seed, kind, 1)
    assert seed_n(seed, kind, last) == plateau
    assert seed_n(seed, kind, last + 1) == plateau - 1
    flat = check_conv(target, 1, (1, last), kind=kind, rule=rule)
    drop = check_conv(target, 1, (1, last + 1), kind=kind, rule=rule)
    assert (flat.n, drop.n) == (plateau, plateau - 1)
    assert flat.ok and drop.ok
    # and one step further along: K = 2 steps past the plateau
    far = last + d + 1
    assert (
        check_conv(target, 1, (1, far), kind=kind, rule=rule).n
        == plateau - 2
        == seed_n(seed, kind, far)
    )


@pytest.mark.parametrize(("target", "rule", "kind"), CASES, ids=CASE_IDS)
def test_n_below_one_is_unsupported(target: str, rule: str, kind: str) -> None:
    seed = seed_rule(target, rule)
    c, d, _ = seed.n[kind]
    k_one = (c - 1) * d  # CEIL(K/d) = c - 1: N = 1, the smallest supported
    assert seed_n(seed, kind, k_one) == 1 and seed_n(seed, kind, k_one + 1) == 0
    last_ok = check_conv(target, 1, (1, k_one), kind=kind, rule=rule)
    assert last_ok.ok and last_ok.n == 1
    zero = check_conv(target, 1, (1, k_one + 1), kind=kind, rule=rule)
    assert not zero.ok and zero.n == 0 and zero.failed == ("N",)
    assert [c.name for c in zero.conditions] == ["(2)", "N"]  # (1) needs a valid N
    assert "< 1: unsupported" in zero.message


@pytest.mark.parametrize(("target", "rule", "kind"), CASES, ids=CASE_IDS)
def test_huge_dilated_kernel_is_unsupported(target: str, rule: str, kind: str) -> None:
    seed = seed_rule(target, rule)
    dilation = next(
        dd for dd in itertools.count(1) if seed_n(seed, kind, seed_dilated(3, dd) ** 2) < 1
    )
    dk = seed_dilated(3, dilation)
    result = check_conv(target, 1, (3, 3), (dilation, dilation), kind=kind, rule=rule)
    assert result.dilated_kernel_hw == (dk, dk)
    assert result.n == seed_n(seed, kind, dk * dk) and result.failed == ("N",)
    smaller = check_conv(target, 1, (3, 3), (dilation - 1, dilation - 1), kind=kind, rule=rule)
    assert smaller.ok == (seed_n(seed, kind, seed_dilated(3, dilation - 1) ** 2) >= 1)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(
    case=st.sampled_from(CASES),
    width=st.integers(1, 10_000),
    kernel=st.tuples(st.integers(1, 15), st.integers(1, 15)),
    dilation=st.tuples(st.integers(1, 12), st.integers(1, 12)),
)
def test_agrees_with_the_seed_formulas(
    case: tuple[str, str, str], width: int, kernel: tuple[int, int], dilation: tuple[int, int]
) -> None:
    target, rule, kind = case
    seed = seed_rule(target, rule)
    dkh, dkw = seed_dilated(kernel[0], dilation[0]), seed_dilated(kernel[1], dilation[1])
    result = check_conv(target, width, kernel, dilation, kind=kind, rule=rule)
    expected = seed_failed(seed, kind, width, dkh, dkw)
    assert result.failed == expected
    assert result.ok is (expected == ())
    assert result.n == seed_n(seed, kind, dkh * dkw)
    assert result.dilated_kernel_hw == (dkh, dkw)
    assert result.rule == rule and result.kind == kind and result.width == width


# --------------------------------------------------------------------------------------------
# hand-computed anchors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "width", "kernel", "dilation", "kind", "rule", "ok", "n", "failed"),
    [
        # RK3566 A conv 2x2: N = 8 - CEIL(4/128) = 7; 1024*7 = 7168; 3583*2 = 7166 < 7168
        ("rk3566", 3583, (2, 2), (1, 1), "conv", "A", True, 7, ()),
        # 3584*2 = 7168, not < 7168 (strict)
        ("rk3566", 3584, (2, 2), (1, 1), "conv", "A", False, 7, ("(1)",)),
        ("rk3568", 3584, (2, 2), (1, 1), "deconv", "B", False, 7, ("(1)",)),
        # RK3566 depthwise 11x11: N = 8 - CEIL(121/4096) = 7
        ("rk3566", 600, (11, 11), (1, 1), "depthwise", "B", True, 7, ()),
        # RK3566 conv 3x3 dilation 16: dk = 3*16-16+1 = 33; K = 1089; N = 8 - 9 = -1
        ("rk3566", 16, (3, 3), (16, 16), "conv", "A", False, -1, ("N",)),
        # RK3588 A conv 3x3: N = 12 - MAX(1, 3) = 9 (sic, > 7); 6144*3 = 18432 <= 2048*9
        ("rk3588", 6144, (3, 3), (1, 1), "conv", "A", True, 9, ()),
        ("rk3588", 6145, (3, 3), (1, 1), "conv", "A", False, 9, ("(1)",)),
        # RK3588 B: 1024*9 = 9216; 3072*3 = 9216 <= 9216, 3073*3 = 9219
        ("rk3588", 3072, (3, 3), (1, 1), "conv", "B", True, 9, ()),
        ("rk3588", 3073, (3, 3), (1, 1), "conv", "B", False, 9, ("(1)",)),
        # RK3588 conv 1x384: CEIL(384/128) = 3 -> N = 9; 1x385: CEIL = 4 -> N = 8
        ("rk3588", 8, (1, 384), (1, 1), "conv", "A", True, 9, ()),
        ("rk3588", 8, (1, 385), (1, 1), "conv", "A", True, 8, ()),
        # RK3588 depthwise 1x6145: CEIL(6145/2048) = 4 -> N = 8
        ("rk3588", 8, (1, 6145), (1, 1), "depthwise", "B", True, 8, ()),
        # RK3588 max width 8192 (1x1: (1) 8193 <= 2048*9 holds)
        ("rk3588", 8192, (1, 1), (1, 1), "conv", "A", True, 9, ()),
        ("rk3588", 8193, (1, 1), (1, 1), "conv", "A", False, 9, ("(2)",)),
        # RV1106 conv 3x3: N = 8 - MAX(1, 2) = 6; 2048*6 = 12288 = 4096*3: both edges at 4096
        ("rv1106", 4096, (3, 3), (1, 1), "conv", "A", True, 6, ()),
        ("rv1106", 4097, (3, 3), (1, 1), "conv", "A", False, 6, ("(1)", "(2)")),
        # RV1106 depthwise 3x3: N = 8 - CEIL(9/4096) = 7; 6145*3 = 18435 > 14336
        ("rv1106", 6145, (3, 3), (1, 1), "depthwise", "A", False, 7, ("(1)", "(2)")),
        # RK3562 B conv 7x7: N = 8 - MAX(1, 2) = 6; 12288/7 = 1755.4 -> 1755 ok, 1756 not
        ("rk3562", 1755, (7, 7), (1, 1), "conv", "B", True, 6, ()),
        ("rk3562", 1756, (7, 7), (1, 1), "conv", "B", False, 6, ("(1)",)),
        # RK3576 A depthwise 1x2049: N = 8 - CEIL(2049/2048) = 6
        ("rk3576", 8, (1, 2049), (1, 1), "depthwise", "A", True, 6, ()),
        # RK3576 B depthwise 1x1: N = 8 - MAX(1, 3) = 5
        ("rv1126b", 8, (1, 1), (1, 1), "depthwise", "B", True, 5, ()),
        # RK3576 B deconv 8x1: N = 12 - MAX(1, 2) = 10 (sic); 2048*10/8 = 2560
        ("rk3576", 2560, (8, 1), (1, 1), "deconv", "B", True, 10, ()),
        ("rk3576", 2561, (8, 1), (1, 1), "deconv", "B", False, 10, ("(1)",)),
        # the same kernel under rule A: N = 8 - 2 = 6; 2048*6/8 = 1536
        ("rk3576", 1537, (8, 1), (1, 1), "deconv", "A", False, 6, ("(1)",)),
        # RK2118 conv 5x5 dilation 2: dk = 9, K = 81, N = 6; 12288/9 = 1365.3
        ("rk2118", 1365, (5, 5), (2, 2), "conv", "A", True, 6, ()),
        ("rk2118", 1366, (5, 5), (2, 2), "conv", "A", False, 6, ("(1)",)),
        # RV1103B deconv 1x768: CEIL(768/128) = 6 -> N = 2; 1x769 -> 1; 1x897 -> 0
        ("rv1103b", 2048, (1, 768), (1, 1), "deconv", "A", True, 2, ()),
        ("rv1106b", 2048, (1, 769), (1, 1), "deconv", "A", True, 1, ()),
        ("rv1106b", 2049, (1, 769), (1, 1), "deconv", "A", False, 1, ("(1)",)),
        ("rv1103b", 1, (1, 897), (1, 1), "deconv", "A", False, 0, ("N",)),
    ],
)
def test_hand_computed_cases(
    target: str,
    width: int,
    kernel: tuple[int, int],
    dilation: tuple[int, int],
    kind: str,
    rule: str,
    ok: bool,
    n: int,
    failed: tuple[str, ...],
) -> None:
    result = check_conv(target, width, kernel, dilation, kind=kind, rule=rule)
    assert (result.ok, result.n, result.failed) == (ok, n, failed)


def test_messages_say_the_numbers_and_the_platform() -> None:
    result = check_conv("rk3588", 6145, (3, 3))
    first = result.conditions[0]
    assert (first.name, first.ok) == ("(1)", False)
    assert first.text == (
        "(1) width·dkh = 6145·3 = 18435 > 2048·N = 2048·9 = 18432 [RK3588 rule A conv]"
    )
    assert "RK3588" in result.message and "unsupported" in result.message
    strict = check_conv("rk3566", 3584, (2, 2))
    assert "(1) width·dkh = 3584·2 = 7168 >= 1024·N = 1024·7 = 7168" in strict.message
    ok = check_conv("rv1106", 100, (3, 3))
    assert ok.ok and "supported" in ok.message and "RV1103/RV1106" in ok.message
    assert [c.name for c in ok.conditions] == ["(1)", "(2)", "N"]
    assert all(c.ok for c in ok.conditions)
    n_text = ok.conditions[2].text
    assert "N = 8 - MAX(CEIL(K/128), 2)" in n_text and "= 6" in n_text


# --------------------------------------------------------------------------------------------
# which rule applies
# --------------------------------------------------------------------------------------------

# From the input table, rank-4 rows: the width rule column for channel 1, 3, 4.
RULE_FROM_INPUT_TABLE = {
    ("rk3566", "int8"): "A",
    ("rk3566", "float16"): "B",
    ("rk3568", "int8"): "A",
    ("rk3568", "float16"): "B",
    ("rk3588", "int8"): "A",
    ("rk3588", "float16"): "B",
    ("rk3562", "int8"): "A",
    ("rk3562", "float16"): "B",
    ("rk3576", "int8"): "A",
    ("rk3576", "float16"): "B",
    ("rv1126b", "int8"): "A",
    ("rv1126b", "float16"): "B",
    ("rv1103", "int8"): "A",
    ("rv1106", "int8"): "A",
    ("rk2118", "float16"): "A",
    ("rv1103b", "int8"): "A",
    ("rv1106b", "int8"): "A",
}


@pytest.mark.parametrize(("target", "first_layer"), list(RULE_FROM_INPUT_TABLE))
def test_rule_defaults_from_the_input_table(target: str, first_layer: str) -> None:
    result = check_conv(target, 64, (3, 3), first_layer=first_layer)
    assert result.rule == RULE_FROM_INPUT_TABLE[(target, first_layer)]


@pytest.mark.parametrize(
    ("target", "first_layer"),
    [("rk2118", "int8"), ("rv1106", "float16"), ("rv1103b", "float16")],
)
def test_single_rule_platforms_use_it_and_say_why(target: str, first_layer: str) -> None:
    # RK2118 lists float16 rows only (its width rule is A); the default first_layer="int8" and the
    # float16 first layer on int8-only platforms fall back to the platform's only rule, noted.
    result = check_conv(target, 64, (3, 3), first_layer=first_layer)
    assert result.rule == "A" and result.ok
    assert f"no rank-4 first_layer={first_layer} input rows" in result.message


def test_rk3576_rule_b_from_float16_first_layer_uses_deconv_12() -> None:
    # 12 - MAX(CEIL(9/128), 2) = 10 (sic)
    assert check_conv("rk3576", 64, (3, 3), kind="deconv", first_layer="float16").n == 10


# --------------------------------------------------------------------------------------------
# targets without limits, bad arguments
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", NO_LIMIT_TARGETS)
def test_targets_without_width_limits(target: str) -> None:
    result = check_conv(target, 100_000, (3, 3), (2, 2), kind="depthwise")
    assert result.ok and result.n is None and result.rule is None
    assert result.conditions == () and result.failed == ()
    assert result.dilated_kernel_hw == (5, 5)
    assert f"the seeds give no convolution width limits for {target}" in result.message


@pytest.mark.parametrize(
    ("args", "kwargs", "fragment"),
    [
        (("rk9999", 8, (3, 3)), {}, "unknown target 'rk9999': expected one of rk3566"),
        (("RK3588", 8, (3, 3)), {}, "rdk-s100"),
        (("rk3588", 8, (3, 3)), {"kind": "pool"}, "expected one of conv, depthwise, deconv"),
        (("kl730", 8, (3, 3)), {"kind": "Conv"}, "got 'Conv'"),
        (("rk3588", 0, (3, 3)), {}, "width: expected a positive integer, got 0"),
        (("rk3588", -5, (3, 3)), {}, "got -5"),
        (("rk3588", True, (3, 3)), {}, "got True"),
        (("rk3588", 8.0, (3, 3)), {}, "got 8.0"),
        (("rk3588", 8, (0, 3)), {}, "kernel_hw: expected two positive integers"),
        (("rk3588", 8, (3,)), {}, "kernel_hw"),
        (("rk3588", 8, "3x3"), {}, "kernel_hw"),
        (("rk3588", 8, (3, 3), (1, 0)), {}, "dilation_hw: expected two positive integers"),
        (("rk3588", 8, (3, 3), (1, -2)), {}, "dilation_hw"),
        (("rv1106", 8, (3, 3)), {"rule": "B"}, "RV1103/RV1106 lists rule A), got 'B'"),
        (("rk2118", 8, (3, 3)), {"rule": "B"}, "got 'B'"),
        (("rv1106b", 8, (3, 3)), {"rule": "B"}, "got 'B'"),
        (("rk3588", 8, (3, 3)), {"rule": "C"}, "expected one of A, B"),
        (("rk3588", 8, (3, 3)), {"first_layer": "int16"}, "first_layer: expected"),
    ],
)
def test_bad_arguments_raise_layout_error(
    args: tuple[object, ...], kwargs: dict[str, object], fragment: str
) -> None:
    with pytest.raises(LayoutError, match=re.escape(fragment)):
        check_conv(*args, **kwargs)  # type: ignore[arg-type]


def test_result_is_frozen_and_exported() -> None:
    result = check_conv("rk3588", 8, (3, 3))
    assert isinstance(result, ConvCheck)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.ok = False  # type: ignore[misc]
    assert {"check_conv", "ConvCheck"} <= set(npu_hil.targets.__all__)


def test_list_arguments_are_accepted() -> None:
    a = check_conv("rk3588", 100, [3, 3], [2, 1])  # type: ignore[arg-type]
    b = check_conv("rk3588", 100, (3, 3), (2, 1))
    assert a == b
