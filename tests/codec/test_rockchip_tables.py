"""The RKNN2 V2.5.0 input/output tables in npu_hil.targets.rockchip, checked row by row against the
seed.

The golden tables below are transcribed from ``seeds/002_0de9e292831d3a07.txt`` (Russian), one
line per seed row, columns in the seed's order, with the seed's words rendered in English:
"no restriction" -> any (or none in a width-limit column), "not 4-D" -> not 4, "other types
(input alignment may change)" -> other, "no" (alignment) -> none, "multiple of 8" -> 8, and
"last layer convolution: multiple of 16; other operators: multiple of 8" -> conv 16, other 8.
"""

from __future__ import annotations

import itertools
import re

import pytest

from npu_hil.harness.errors import LayoutError
from npu_hil.targets import rockchip
from npu_hil.targets.rockchip import InputRow, OutputRow

# platform | first layer | rank | declared input type | mean/scale/quant on | width align C=1,3,4 |
# width align other C | width rule C=1,3,4 | width rule other C
SEED_INPUTS = """
RK3566/RK3568 | int8 | 4 | uint8 | NPU | 8 | 1 | A | none
RK3566/RK3568 | int8 | 4 | int8 | NPU | 8 | 1 | A | none
RK3566/RK3568 | int8 | 4 | float16 | CPU | 8 | 1 | A | none
RK3566/RK3568 | int8 | 4 | other | CPU | 8 | 1 | A | none
RK3566/RK3568 | float16 | 4 | uint8 | CPU | 4 | 1 | B | none
RK3566/RK3568 | float16 | 4 | int8 | CPU | 4 | 1 | B | none
RK3566/RK3568 | float16 | 4 | float16 | CPU | 4 | 1 | B | none
RK3566/RK3568 | float16 | 4 | other | CPU | 4 | 1 | B | none
RK3566/RK3568 | any | not 4 | any | CPU | 1 | 1 | none | none
RK3588 | int8 | 4 | uint8 | NPU | 16 | 1 | A | none
RK3588 | int8 | 4 | int8 | NPU | 16 | 1 | A | none
RK3588 | int8 | 4 | float16 | CPU | 16 | 1 | A | none
RK3588 | int8 | 4 | other | CPU | 16 | 1 | A | none
RK3588 | float16 | 4 | uint8 | CPU | 8 | 1 | B | none
RK3588 | float16 | 4 | int8 | CPU | 8 | 1 | B | none
RK3588 | float16 | 4 | float16 | CPU | 8 | 1 | B | none
RK3588 | float16 | 4 | other | CPU | 8 | 1 | B | none
RK3588 | any | not 4 | any | CPU | 1 | 1 | none | none
RV1103/RV1106 | int8 | 4 | uint8 | NPU | 16 | 1 | A | none
RK3562 | int8 | 4 | uint8 | NPU | 16 | 1 | A | none
RK3562 | int8 | 4 | int8 | NPU | 16 | 1 | A | none
RK3562 | int8 | 4 | float16 | CPU | 16 | 1 | A | none
RK3562 | int8 | 4 | other | CPU | 16 | 1 | A | none
RK3562 | float16 | 4 | uint8 | CPU | 8 | 1 | B | none
RK3562 | float16 | 4 | int8 | CPU | 8 | 1 | B | none
RK3562 | float16 | 4 | float16 | CPU | 8 | 1 | B | none
RK3562 | float16 | 4 | other | CPU | 8 | 1 | B | none
RK3562 | any | not 4 | any | CPU | 1 | 1 | none | none
RK3576/RV1126B | int8 | 4 | uint8 | NPU | 16 | 1 | A | none
RK3576/RV1126B | int8 | 4 | int8 | NPU | 16 | 1 | A | none
RK3576/RV1126B | int8 | 4 | float16 | CPU | 16 | 1 | A | none
RK3576/RV1126B | int8 | 4 | other | CPU | 16 | 1 | A | none
RK3576/RV1126B | float16 | 4 | uint8 | CPU | 8 | 1 | B | none
RK3576/RV1126B | float16 | 4 | int8 | CPU | 8 | 1 | B | none
RK3576/RV1126B | float16 | 4 | float16 | CPU | 8 | 1 | B | none
RK3576/RV1126B | float16 | 4 | other | CPU | 8 | 1 | B | none
RK3576/RV1126B | any | not 4 | any | CPU | 1 | 1 | none | none
RK2118 | float16 | 4 | float16 | CPU | 4 | 1 | A | none
RK2118 | float16 | not 4 | float16 | CPU | 1 | 1 | A | none
RV1103B/RV1106B | int8 | 4 | uint8 | NPU | 8 | 1 | A | none
RV1103B/RV1106B | int8 | 4 | int8 | NPU | 8 | 1 | A | none
"""

# platform | output precision | rank | layout | channel alignment | H*W alignment
SEED_OUTPUTS = """
RK3566/RK3568 | int8 | 4 | NCHW | none | none
RK3566/RK3568 | int8 | 4 | NHWC | 8 | none
RK3566/RK3568 | int8 | 4 | NC1HWC2 | conv 16, other 8 | 4
RK3566/RK3568 | int8 | 4 | UNDEFINE | none | none
RK3566/RK3568 | float16 | 4 | NCHW | none | none
RK3566/RK3568 | float16 | 4 | NHWC | 4 | none
RK3566/RK3568 | float16 | 4 | NC1HWC2 | conv 8, other 4 | 4
RK3566/RK3568 | float16 | 4 | UNDEFINE | none | none
RK3566/RK3568 | any | not 4 | UNDEFINE | none | none
RK3588 | int8 | 4 | NCHW | none | none
RK3588 | int8 | 4 | NHWC | 16 | none
RK3588 | int8 | 4 | NC1HWC2 | conv 32, other 16 | 4
RK3588 | int8 | 4 | UNDEFINE | none | none
RK3588 | float16 | 4 | NCHW | none | none
RK3588 | float16 | 4 | NHWC | 8 | none
RK3588 | float16 | 4 | NC1HWC2 | conv 16, other 8 | 4
RK3588 | float16 | 4 | UNDEFINE | none | none
RK3588 | any | not 4 | UNDEFINE | none | none
RV1103/RV1106 | int8 | 4 | NC1HWC2 | conv 32, other 16 | 4
RV1103/RV1106 | int8 | 4 | NHWC | none | none
RK3562 | int8 | 4 | NCHW | none | none
RK3562 | int8 | 4 | NHWC | none | none
RK3562 | int8 | 4 | NC1HWC2 | conv 32, other 16 | 4
RK3562 | int8 | 4 | UNDEFINE | none | none
RK3562 | float16 | 4 | NCHW | none | none
RK3562 | float16 | 4 | NHWC | none | none
RK3562 | float16 | 4 | NC1HWC2 | conv 16, other 8 | 4
RK3562 | float16 | 4 | UNDEFINE | none | none
RK3562 | any | not 4 | UNDEFINE | none | none
RK3576/RV1126B | int8 | 4 | NCHW | none | none
RK3576/RV1126B | int8 | 4 | NHWC | none | none
RK3576/RV1126B | int8 | 4 | NC1HWC2 | conv 32, other 16 | 4
RK3576/RV1126B | int8 | 4 | UNDEFINE | none | none
RK3576/RV1126B | float16 | 4 | NCHW | none | none
RK3576/RV1126B | float16 | 4 | NHWC | none | none
RK3576/RV1126B | float16 | 4 | NC1HWC2 | conv 16, other 8 | 4
RK3576/RV1126B | float16 | 4 | UNDEFINE | none | none
RK3576/RV1126B | any | not 4 | UNDEFINE | none | none
RK2118 | float16 | 4 | NC1HWC2 | conv 8, other 4 | 4
RK2118 | float16 | 4 | NHWC | none | none
RK2118 | float16 | not 4 | UNDEFINE | none | none
RV1103B/RV1106B | int8 | 4 | NC1HWC2 | conv 8, other 8 | 4
RV1103B/RV1106B | int8 | 4 | NHWC | none | none
"""

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
ALL_TARGETS = list(TARGET_PLATFORM)
INPUT_TYPES = ("uint8", "int8", "float16", "other")
PRECISIONS = ("int8", "float16")
LAYOUTS = ("NCHW", "NHWC", "NC1HWC2", "UNDEFINE")
NOT_4_RANKS = (1, 2, 3, 5)


def _cells(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.split("|")] for line in text.strip().splitlines()]


def _none_or_int(cell: str) -> int:
    return 1 if cell == "none" else int(cell)


def golden_input_rows() -> list[InputRow]:
    rows = []
    for platform, first, rank, itype, on, a134, aother, rule, _ in _cells(SEED_INPUTS):
        rows.append(
            InputRow(
                platform=platform,
                first_layer=first,  # type: ignore[arg-type]
                rank4=rank == "4",
                input_types="any" if itype == "any" else frozenset({itype}),
                mean_scale_on=on,  # type: ignore[arg-type]
                width_align_c134=int(a134),
                width_align_other=int(aother),
                width_rule=None if rule == "none" else rule,  # type: ignore[arg-type]
            )
        )
    return rows


def golden_output_rows() -> list[OutputRow]:
    rows = []
    for platform, precision, rank, layout, channel, hw in _cells(SEED_OUTPUTS):
        match = re.fullmatch(r"conv (\d+), other (\d+)", channel)
        if match:
            conv, other = int(match[1]), int(match[2])
        else:
            conv = other = _none_or_int(channel)
        rows.append(
            OutputRow(
                platform=platform,
                precision=precision,  # type: ignore[arg-type]
                rank4=rank == "4",
                layouts=frozenset({layout}),
                channel_align_conv=conv,
                channel_align_other=other,
                hw_align=_none_or_int(hw),
            )
        )
    return rows


def _input_cases(row: InputRow) -> list[tuple[str, int, str]]:
    firsts = PRECISIONS if row.first_layer == "any" else (row.first_layer,)
    ranks = (4,) if row.rank4 else NOT_4_RANKS
    types = INPUT_TYPES if row.input_types == "any" else tuple(row.input_types)
    return list(itertools.product(firsts, ranks, types))


def _output_cases(row: OutputRow) -> list[tuple[str, int, str]]:
    precisions = PRECISIONS if row.precision == "any" else (row.precision,)
    ranks = (4,) if row.rank4 else NOT_4_RANKS
    return list(itertools.product(precisions, ranks, tuple(row.layouts)))


# --------------------------------------------------------------------------------------------
# targets
# --------------------------------------------------------------------------------------------


def test_target_names_and_platform_groups() -> None:
    assert rockchip.TARGETS == (
        "rk3566",
        "rk3568",
        "rk3588",
        "rk3562",
        "rv1103",
        "rv1106",
        "rk3576",
        "rv1126b",
        "rk2118",
        "rv1103b",
        "rv1106b",
    )
    assert rockchip.PLATFORM_OF == TARGET_PLATFORM
    assert set(rockchip.PLATFORM_OF) == set(rockchip.TARGETS)


@pytest.mark.parametrize("bad", ["RK3588", "rk3399", "kl730", "", "rdk-x5"])
def test_unknown_rockchip_target_lists_the_known_ones(bad: str) -> None:
    with pytest.raises(LayoutError, match="unknown Rockchip target") as info:
        rockchip.input_row(bad, first_layer="int8", rank=4, input_type="uint8")
    assert "rk3588" in str(info.value) and "rv1106b" in str(info.value)
    with pytest.raises(LayoutError):
        rockchip.output_row(bad, precision="int8", rank=4, layout="NHWC")
    with pytest.raises(LayoutError):
        rockchip.tables_text(bad)


# --------------------------------------------------------------------------------------------
# §1 inputs
# --------------------------------------------------------------------------------------------


def test_input_table_is_the_seed_row_by_row() -> None:
    assert list(rockchip.INPUT_ROWS) == golden_input_rows()


def test_seed_has_no_width_limit_for_other_channel_counts() -> None:
    # The model keeps no column for it because every seed row says "no restriction".
    assert {cells[-1] for cells in _cells(SEED_INPUTS)} == {"none"}


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_input_row_finds_every_seed_row(target: str) -> None:
    rows = [r for r in golden_input_rows() if r.platform == TARGET_PLATFORM[target]]
    assert rows, "every platform has input rows"
    assert list(rockchip.input_rows(target)) == rows
    for row in rows:
        for first, rank, itype in _input_cases(row):
            got = rockchip.input_row(target, first_layer=first, rank=rank, input_type=itype)
            assert got == row, (first, rank, itype)


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_unlisted_input_combinations_raise(target: str) -> None:
    platform = TARGET_PLATFORM[target]
    covered = {
        case
        for row in golden_input_rows()
        if row.platform == platform
        for case in _input_cases(row)
    }
    missing = [
        case for case in itertools.product(PRECISIONS, (4, 3), INPUT_TYPES) if case not in covered
    ]
    for first, rank, itype in missing:
        with pytest.raises(LayoutError) as info:
            rockchip.input_row(target, first_layer=first, rank=rank, input_type=itype)
        message = str(info.value)
        assert message.startswith(
            f"{target}: no input row for first_layer={first}, input type {itype}, rank {rank} "
            f"({platform} lists: "
        )


def test_input_error_message_names_what_the_platform_lists() -> None:
    with pytest.raises(LayoutError) as info:
        rockchip.input_row("rv1106", first_layer="float16", rank=4, input_type="uint8")
    assert str(info.value) == (
        "rv1106: no input row for first_layer=float16, input type uint8, rank 4 "
        "(RV1103/RV1106 lists: first_layer=int8 rank 4 input uint8)"
    )
    with pytest.raises(LayoutError) as info:
        rockchip.input_row("rk2118", first_layer="int8", rank=4, input_type="int8")
    assert str(info.value) == (
        "rk2118: no input row for first_layer=int8, input type int8, rank 4 "
        "(RK2118 lists: first_layer=float16 rank 4 input float16; "
        "first_layer=float16 rank not 4 input float16)"
    )
    with pytest.raises(LayoutError) as info:
        rockchip.input_row("rv1103b", first_layer="int8", rank=3, input_type="uint8")
    assert "RV1103B/RV1106B lists: first_layer=int8 rank 4 input uint8/int8" in str(info.value)


def test_rv1103_rv1106_lists_only_int8_uint8_rank4() -> None:
    row = rockchip.input_row("rv1103", first_layer="int8", rank=4, input_type="uint8")
    assert (row.mean_scale_on, row.width_align_c134, row.width_rule) == ("NPU", 16, "A")
    for itype in ("int8", "float16", "other"):
        with pytest.raises(LayoutError):
            rockchip.input_row("rv1103", first_layer="int8", rank=4, input_type=itype)


def test_rk2118_non_4d_row_keeps_rule_a_sic() -> None:
    row = rockchip.input_row("rk2118", first_layer="float16", rank=3, input_type="float16")
    assert (row.rank4, row.width_align_c134, row.width_rule) == (False, 1, "A")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"first_layer": "any", "rank": 4, "input_type": "uint8"}, "first_layer: expected"),
        ({"first_layer": "int16", "rank": 4, "input_type": "uint8"}, "got 'int16'"),
        ({"first_layer": "int8", "rank": 4, "input_type": "float32"}, "input_type_of"),
        ({"first_layer": "int8", "rank": -1, "input_type": "uint8"}, "rank: expected"),
        ({"first_layer": "int8", "rank": True, "input_type": "uint8"}, "rank: expected"),
        ({"first_layer": "int8", "rank": "4", "input_type": "uint8"}, "rank: expected"),
    ],
)
def test_input_row_bad_arguments(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(LayoutError, match=re.escape(fragment)):
        rockchip.input_row("rk3588", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        ("uint8", "uint8"),
        ("int8", "int8"),
        ("float16", "float16"),
        ("float32", "other"),
        ("int16", "other"),
        ("float64", "other"),
        ("bool", "other"),
        ("int32", "other"),
    ],
)
def test_input_type_of(dtype: str, expected: str) -> None:
    assert rockchip.input_type_of(dtype) == expected


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_default_first_layer(target: str) -> None:
    expected = "float16" if target == "rk2118" else "int8"
    assert rockchip.default_first_layer(target) == expected


def test_width_align_by_channel_count() -> None:
    row = rockchip.input_row("rk3588", first_layer="int8", rank=4, input_type="uint8")
    assert [row.width_align(c) for c in (1, 2, 3, 4, 5, 16)] == [16, 1, 16, 16, 1, 1]
    row = rockchip.input_row("rk3566", first_layer="float16", rank=4, input_type="other")
    assert [row.width_align(c) for c in (1, 3, 4, 8)] == [4, 4, 4, 1]


# --------------------------------------------------------------------------------------------
# §3 outputs
# --------------------------------------------------------------------------------------------


def test_output_table_is_the_seed_row_by_row() -> None:
    assert list(rockchip.OUTPUT_ROWS) == golden_output_rows()


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_output_row_finds_every_seed_row(target: str) -> None:
    rows = [r for r in golden_output_rows() if r.platform == TARGET_PLATFORM[target]]
    assert rows
    assert list(rockchip.output_rows(target)) == rows
    for row in rows:
        for precision, rank, layout in _output_cases(row):
            got = rockchip.output_row(target, precision=precision, rank=rank, layout=layout)
            assert got == row, (precision, rank, layout)


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_unlisted_output_combinations_raise(target: str) -> None:
    platform = TARGET_PLATFORM[target]
    covered = {
        case
        for row in golden_output_rows()
        if row.platform == platform
        for case in _output_cases(row)
    }
    missing = [c for c in itertools.product(PRECISIONS, (4, 3), LAYOUTS) if c not in covered]
    assert missing, "every platform leaves something unlisted (at least NCHW at rank 3)"
    for precision, rank, layout in missing:
        with pytest.raises(LayoutError) as info:
            rockchip.output_row(target, precision=precision, rank=rank, layout=layout)
        assert str(info.value).startswith(
            f"{target}: no output row for precision={precision}, rank {rank}, layout {layout} "
            f"({platform} lists: "
        )


@pytest.mark.parametrize(
    ("target", "precision", "layout", "listing"),
    [
        (
            "rv1106",
            "int8",
            "NCHW",
            "RV1103/RV1106 lists: precision=int8 rank 4 layout NC1HWC2/NHWC",
        ),
        (
            "rv1106",
            "float16",
            "NHWC",
            "RV1103/RV1106 lists: precision=int8 rank 4 layout NC1HWC2/NHWC",
        ),
        (
            "rk2118",
            "int8",
            "NC1HWC2",
            "RK2118 lists: precision=float16 rank 4 layout NC1HWC2/NHWC; "
            "precision=float16 rank not 4 layout UNDEFINE",
        ),
        (
            "rv1103b",
            "float16",
            "NC1HWC2",
            "RV1103B/RV1106B lists: precision=int8 rank 4 layout NC1HWC2/NHWC",
        ),
        ("rk2118", "float16", "NCHW", "RK2118 lists:"),
    ],
)
def test_output_error_message_names_what_the_platform_lists(
    target: str, precision: str, layout: str, listing: str
) -> None:
    with pytest.raises(LayoutError) as info:
        rockchip.output_row(target, precision=precision, rank=4, layout=layout)
    assert f"({listing}" in str(info.value)


def test_rk3588_rank3_only_undefine() -> None:
    row = rockchip.output_row("rk3588", precision="float16", rank=3, layout="UNDEFINE")
    assert (row.precision, row.rank4) == ("any", False)
    with pytest.raises(LayoutError, match="rank 3, layout NC1HWC2"):
        rockchip.output_row("rk3588", precision="int8", rank=3, layout="NC1HWC2")


def test_output_channel_align_helper() -> None:
    row = rockchip.output_row("rk3566", precision="int8", rank=4, layout="NC1HWC2")
    assert (row.channel_align(True), row.channel_align(False), row.hw_align) == (16, 8, 4)
    row = rockchip.output_row("rv1106b", precision="int8", rank=4, layout="NC1HWC2")
    assert (row.channel_align(True), row.channel_align(False)) == (8, 8)  # sic: both 8


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"precision": "int8", "rank": 4, "layout": "UNDEFINED"}, "layout: expected one of"),
        ({"precision": "int8", "rank": 4, "layout": "nhwc"}, "got 'nhwc'"),
        ({"precision": "uint8", "rank": 4, "layout": "NHWC"}, "precision_of"),
        ({"precision": "any", "rank": 4, "layout": "NHWC"}, "precision: expected"),
        ({"precision": "int8", "rank": -4, "layout": "NHWC"}, "rank: expected"),
    ],
)
def test_output_row_bad_arguments(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(LayoutError, match=re.escape(fragment)):
        rockchip.output_row("rk3588", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("dtype", "expected"), [("int8", "int8"), ("uint8", "int8"), ("float16", "float16")]
)
def test_precision_of(dtype: str, expected: str) -> None:
    assert rockchip.precision_of(dtype) == expected


@pytest.mark.parametrize("dtype", ["float32", "int16", "int32", "bool", "float64", ""])
def test_precision_of_refuses_other_dtypes(dtype: str) -> None:
    with pytest.raises(LayoutError) as info:
        rockchip.precision_of(dtype)
    message = str(info.value)
    assert "int8, uint8 or float16" in message and repr(dtype) in message


# --------------------------------------------------------------------------------------------
# NC1HWC2 C2
# --------------------------------------------------------------------------------------------

GUIDE = "RKNPU User Guide v1.5.2 table 4-6"
DERIVED = "derived: half the seed's last-layer-conv channel multiple"


@pytest.mark.parametrize(
    ("target", "precision", "c2", "source"),
    [
        ("rk3566", "int8", 8, GUIDE),
        ("rk3566", "float16", 4, GUIDE),
        ("rk3568", "int8", 8, GUIDE),
        ("rk3568", "float16", 4, GUIDE),
        ("rk3588", "int8", 16, GUIDE),
        ("rk3588", "float16", 8, GUIDE),
        ("rv1103", "int8", 16, GUIDE),
        ("rv1106", "int8", 16, GUIDE),
        ("rk3562", "int8", 16, GUIDE),
        ("rk3562", "float16", 8, GUIDE),
        # seed: last layer conv multiple 32 (int8) / 16 (float16) -> 16 / 8
        ("rk3576", "int8", 16, DERIVED),
        ("rk3576", "float16", 8, DERIVED),
        ("rv1126b", "int8", 16, DERIVED),
        ("rv1126b", "float16", 8, DERIVED),
        # seed: RK2118 float16 multiple 8 -> 4; RV1103B/RV1106B int8 multiple 8 -> 4
        ("rk2118", "float16", 4, DERIVED),
        ("rv1103b", "int8", 4, DERIVED),
        ("rv1106b", "int8", 4, DERIVED),
    ],
)
def test_c2_default(target: str, precision: str, c2: int, source: str) -> None:
    assert rockchip.c2_default(target, precision) == (c2, source)


@pytest.mark.parametrize(
    ("target", "precision"),
    [
        ("rv1106", "float16"),
        ("rv1103", "float16"),
        ("rk2118", "int8"),
        ("rv1103b", "float16"),
        ("rv1106b", "float16"),
        ("rk3588", "float32"),
    ],
)
def test_c2_default_refuses_what_the_output_table_does_not_list(
    target: str, precision: str
) -> None:
    with pytest.raises(LayoutError):
        rockchip.c2_default(target, precision)


# --------------------------------------------------------------------------------------------
# definitions and rendering
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "d", "expected"),
    # kernel * dilation - dilation + 1
    [(1, 1, 1), (3, 1, 3), (3, 2, 5), (3, 16, 33), (1, 5, 1), (5, 3, 13), (7, 4, 25)],
)
def test_dilated_kernel(k: int, d: int, expected: int) -> None:
    assert rockchip.dilated_kernel(k, d) == expected


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_tables_text_renders_every_table(target: str) -> None:
    text = rockchip.tables_text(target)
    assert text.startswith(f"{target}: RKNN2 V2.5.0 table group {TARGET_PLATFORM[target]}")
    for heading in ("Inputs", "Convolution width limits", "Outputs", "NC1HWC2 block C2"):
        assert heading in text
    lines = text.splitlines()
    n_input = sum(1 for r in golden_input_rows() if r.platform == TARGET_PLATFORM[target])
    start = lines.index("Inputs")
    # heading, column names, rule, then one line per seed row
    assert len([ln for ln in lines[start + 3 : start + 3 + n_input] if ln.strip()]) == n_input


def test_tables_text_shows_the_rules_as_written() -> None:
    rk3566 = rockchip.tables_text("rk3566")
    assert "width*dkh < 1024*N" in rk3566 and "8 - CEIL(K/4096)" in rk3566
    rk3588 = rockchip.tables_text("rk3588")
    assert "width*dkh <= 1024*N" in rk3588 and "width <= 8192" in rk3588
    assert "12 - MAX(CEIL(K/2048), 3)" in rk3588
    rk3576 = rockchip.tables_text("rk3576")
    assert "12 - MAX(CEIL(K/128), 2)" in rk3576 and "8 - MAX(CEIL(K/2048), 3)" in rk3576
    rv1106 = rockchip.tables_text("rv1106")
    assert "float16" not in rv1106.split("Outputs", 1)[1]
