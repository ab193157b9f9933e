"""Rockchip RKNN2 layouts driven by the seed's tables (spec/rknn2-io-constraints.md).

The expected alignments below are transcribed from the spec's tables, not read from
``npu_hil.targets.rockchip``: input width alignment for C in {1,3,4} per platform and first-layer
precision; output NHWC channel multiples; NC1HWC2 channel multiples per last op; the C2 block of
the RKNPU User Guide (and half the "last layer conv" multiple where the guide is silent, the
reading the codec documents).
"""

from __future__ import annotations

from math import lcm
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import ROCKCHIP_TARGETS, random_tensor

from npu_hil.harness.codec import get_layout
from npu_hil.harness.errors import LayoutError

# target -> {first-layer precision: width alignment for C in {1, 3, 4}} (input table, rank 4).
INPUT_WIDTH_ALIGN: dict[str, dict[str, int]] = {
    "rk3566": {"int8": 8, "float16": 4},
    "rk3568": {"int8": 8, "float16": 4},
    "rk3588": {"int8": 16, "float16": 8},
    "rv1103": {"int8": 16},
    "rv1106": {"int8": 16},
    "rk3562": {"int8": 16, "float16": 8},
    "rk3576": {"int8": 16, "float16": 8},
    "rv1126b": {"int8": 16, "float16": 8},
    "rk2118": {"float16": 4},
    "rv1103b": {"int8": 8},
    "rv1106b": {"int8": 8},
}
# Where Rockchip's own software (rknn-toolkit2 2.5.0 and its runtimes, tests/data/rknn/) does
# not do what the seed's table says, the prediction follows it; the seed's value stays above.
# (target, first layer, C) -> observed width alignment (deviations input-width-16,
# rk2118-fp16-width, fp16-c4-unaligned of npu_hil/targets/rockchip/observed.py).
OBSERVED_INPUT_WIDTH_ALIGN: dict[tuple[str, str, int], int] = {
    **{(t, "int8", c): 16 for t in ("rv1103b", "rv1106b") for c in (1, 3, 4)},
    ("rk2118", "float16", 1): 8,
    ("rk2118", "float16", 3): 8,
    ("rk2118", "float16", 4): 1,
    ("rk3566", "float16", 4): 1,
    ("rk3568", "float16", 4): 1,
}
# Declared input type to use with each first layer (one the platform lists with it).
INPUT_DTYPE = {"rv1103": "uint8", "rv1106": "uint8", "rk2118": "float16"}

# target -> {precision: NHWC output channel multiple}
NHWC_CHANNELS: dict[str, dict[str, int]] = {
    "rk3566": {"int8": 8, "float16": 4},
    "rk3568": {"int8": 8, "float16": 4},
    # seed: int8 x16, float16 x8; observed unpadded (deviation nhwc-output-unpadded)
    "rk3588": {"int8": 1, "float16": 1},
    "rv1103": {"int8": 1},
    "rv1106": {"int8": 1},
    "rk3562": {"int8": 1, "float16": 1},
    "rk3576": {"int8": 1, "float16": 1},
    "rv1126b": {"int8": 1, "float16": 1},
    "rk2118": {"float16": 1},
    "rv1103b": {"int8": 1},
    "rv1106b": {"int8": 1},
}

# target -> {precision: (channel multiple, last layer conv; other ops; C2 block)}
NC1HWC2: dict[str, dict[str, tuple[int, int, int]]] = {
    "rk3566": {"int8": (16, 8, 8), "float16": (8, 4, 4)},
    "rk3568": {"int8": (16, 8, 8), "float16": (8, 4, 4)},
    "rk3588": {"int8": (32, 16, 16), "float16": (16, 8, 8)},
    # seed: last layer conv x32 / x16; observed: C2 (deviation conv-last-channels)
    "rv1103": {"int8": (16, 16, 16)},
    "rv1106": {"int8": (16, 16, 16)},
    "rk3562": {"int8": (16, 16, 16), "float16": (8, 8, 8)},
    "rk3576": {"int8": (32, 16, 16), "float16": (16, 8, 8)},
    "rv1126b": {"int8": (32, 16, 16), "float16": (16, 8, 8)},
    "rk2118": {"float16": (8, 4, 4)},
    # seed's reading C2 = 4; observed C2 = 8 (deviation c2-8)
    "rv1103b": {"int8": (8, 8, 8)},
    "rv1106b": {"int8": (8, 8, 8)},
}
PRECISION_DTYPE = {"int8": "int8", "float16": "float16"}


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


# ------------------------------------------------------------------------- input w_stride


INPUT_ROWS = [
    (target, first_layer, align)
    for target, rows in INPUT_WIDTH_ALIGN.items()
    for first_layer, align in rows.items()
]


@pytest.mark.parametrize("c", [1, 3, 4, 2, 5, 16])
@pytest.mark.parametrize("w", [1, 17, 33])
@pytest.mark.parametrize(("target", "first_layer", "align"), INPUT_ROWS)
def test_input_w_stride_follows_the_table(
    target: str, first_layer: str, align: int, c: int, w: int
) -> None:
    dtype = INPUT_DTYPE.get(target, "uint8" if first_layer == "int8" else "float16")
    layout = get_layout(target, "NHWC", (1, c, 2, w), dtype, role="input", first_layer=first_layer)
    seed_align = align if c in (1, 3, 4) else 1
    align = OBSERVED_INPUT_WIDTH_ALIGN.get((target, first_layer, c), seed_align)
    w_stride = round_up(w, align)
    assert layout.attributes["seed_width_align"] == seed_align
    item = np.dtype(dtype).itemsize
    assert layout.attributes["w_stride"] == w_stride
    assert layout.attributes["predicted_w_stride"] == w_stride
    assert layout.strides == (2 * w_stride * c * item, item, w_stride * c * item, c * item)
    assert layout.nbytes == 2 * w_stride * c * item
    assert layout.attributes["size_with_stride"] == layout.nbytes
    assert layout.attributes["size"] == 2 * w * c * item
    assert layout.padding_bytes == 2 * (w_stride - w) * c * item


@pytest.mark.parametrize(
    ("target", "first_layer", "dtype", "c", "w_stride"),
    [
        ("rk3566", "int8", "uint8", 3, 24),
        ("rk3566", "float16", "uint8", 3, 20),
        ("rk3588", "int8", "uint8", 3, 32),
        ("rk3566", "int8", "uint8", 5, 17),
        ("rk3588", "float16", "float16", 4, 24),
        ("rk2118", "float16", "float16", 1, 24),
        ("rv1106b", "int8", "int8", 4, 32),
        ("rv1106", "int8", "int8", 3, 32),  # int8 input: deviation int8-default-input
    ],
)
def test_input_w_stride_examples(
    target: str, first_layer: str, dtype: str, c: int, w_stride: int
) -> None:
    layout = get_layout(target, "NHWC", (1, c, 2, 17), dtype, role="input", first_layer=first_layer)
    assert layout.attributes["w_stride"] == w_stride


def test_declared_input_type_does_not_change_the_alignment_within_a_row_group() -> None:
    for dtype in ("uint8", "int8", "float16", "float32", "int16"):
        layout = get_layout("rk3588", "NHWC", (1, 3, 2, 17), dtype, role="input")
        assert layout.attributes["w_stride"] == 32, dtype


def test_device_w_stride_overrides_the_prediction() -> None:
    layout = get_layout("rk3566", "NHWC", (2, 3, 4, 17), "uint8", role="input", w_stride=40)
    assert layout.attributes["w_stride"] == 40
    assert layout.attributes["predicted_w_stride"] == 24
    assert "given" in layout.provenance["w_stride"]
    assert layout.strides == (4 * 40 * 3, 1, 40 * 3, 3)
    assert layout.nbytes == 2 * 4 * 40 * 3
    x = random_tensor(layout, seed=1)
    buf = layout.pack(x)
    assert np.array_equal(buf[120 : 120 + 17 * 3], x[0, :, 1, :].T.reshape(-1))
    assert np.array_equal(layout.unpack(buf), x)
    # A w_stride of 0 means "not reported": the width itself.
    assert (
        get_layout("rk3566", "NHWC", (1, 3, 4, 17), "uint8", role="input", w_stride=0).attributes[
            "w_stride"
        ]
        == 17
    )


def test_size_with_stride_extends_the_buffer() -> None:
    layout = get_layout(
        "rk3588", "NHWC", (1, 3, 2, 17), "uint8", role="input", size_with_stride=500
    )
    assert layout.nbytes == 500
    assert layout.padding_mask()[192:].all()


# ---------------------------------------------------------------------------- NHWC output


NHWC_ROWS = [
    (target, precision, multiple)
    for target, rows in NHWC_CHANNELS.items()
    for precision, multiple in rows.items()
]


@pytest.mark.parametrize("c", [1, 3, 5, 20])
@pytest.mark.parametrize(("target", "precision", "multiple"), NHWC_ROWS)
def test_nhwc_output_pads_channels_per_table(
    target: str, precision: str, multiple: int, c: int
) -> None:
    dtype = PRECISION_DTYPE[precision]
    item = np.dtype(dtype).itemsize
    layout = get_layout(target, "NHWC", (1, c, 3, 5), dtype)
    padded = round_up(c, multiple)
    assert layout.attributes["dims"] == [1, 3, 5, padded]
    assert layout.strides == (3 * 5 * padded * item, item, 5 * padded * item, padded * item)
    assert layout.nbytes == 15 * padded * item
    assert layout.padding_bytes == 15 * (padded - c) * item


# -------------------------------------------------------------------------------- NC1HWC2


NC1HWC2_ROWS = [
    (target, precision, conv, other, c2)
    for target, rows in NC1HWC2.items()
    for precision, (conv, other, c2) in rows.items()
]


@pytest.mark.parametrize("last_op", ["conv", "other"])
@pytest.mark.parametrize("c", [1, 5, 20, 40])
@pytest.mark.parametrize(("target", "precision", "conv", "other", "c2"), NC1HWC2_ROWS)
def test_nc1hwc2_output_c2_and_c1(
    target: str, precision: str, conv: int, other: int, c2: int, c: int, last_op: str
) -> None:
    dtype = PRECISION_DTYPE[precision]
    item = np.dtype(dtype).itemsize
    layout = get_layout(target, "NC1HWC2", (1, c, 3, 5), dtype, last_op=last_op)
    multiple = lcm(conv if last_op == "conv" else other, c2)
    c1 = round_up(c, multiple) // c2
    plane = 16  # H*W = 15 padded to a multiple of 4
    assert layout.attributes["c2"] == c2
    # H*W = 15 is no multiple of 4: the runtime reports the plane flattened.
    assert layout.attributes["native_dims"] == [1, c1, 1, plane, c2]
    assert layout.nbytes == c1 * plane * c2 * item
    # Channel k sits in block k // C2 at position k % C2 of each pixel.
    assert (
        layout.offset_of((0, c - 1, 0, 0))
        == ((c - 1) // c2) * plane * c2 * item + ((c - 1) % c2) * item
    )
    assert layout.offset_of((0, 0, 1, 2)) == (5 + 2) * c2 * item


@pytest.mark.parametrize(
    ("c", "last_op", "c1"), [(20, "conv", 2), (20, "other", 2), (40, "conv", 4), (40, "other", 3)]
)
def test_nc1hwc2_rk3588_int8_examples(c: int, last_op: str, c1: int) -> None:
    layout = get_layout("rk3588", "NC1HWC2", (1, c, 3, 5), "int8", last_op=last_op)
    assert layout.attributes["c2"] == 16
    assert layout.attributes["native_dims"][1] == c1
    assert layout.nbytes == c1 * 16 * 16


def test_nc1hwc2_pads_the_hw_plane_to_4() -> None:
    layout = get_layout("rk3588", "NC1HWC2", (1, 20, 3, 5), "int8", last_op="conv")
    assert layout.attributes["hw_align"] == 4
    plane_bytes = 16 * 16  # round_up(3 * 5, 4) pixels of C2 = 16 bytes
    assert layout.offset_of((0, 16, 0, 0)) == plane_bytes
    assert layout.locate(15 * 16).padding  # pixel 15 of block 0: the plane's padding
    assert layout.locate(14 * 16).index == (0, 0, 2, 4)
    mask = layout.padding_mask()
    assert mask[15 * 16 : 16 * 16].all()
    unpadded = get_layout("rk3588", "NC1HWC2", (1, 20, 3, 5), "int8", hw_align=1)
    assert unpadded.offset_of((0, 16, 0, 0)) == 15 * 16
    assert unpadded.nbytes == 2 * 15 * 16


def test_nc1hwc2_input_blocks_channels_by_c2() -> None:
    layout = get_layout("rk3588", "NC1HWC2", (1, 20, 3, 5), "int8", role="input")
    assert layout.attributes["c2"] == 16
    assert layout.attributes["native_dims"] == [1, 2, 3, 5, 16]
    assert layout.nbytes == 2 * 15 * 16  # inputs: no H*W plane padding in the tables


def test_native_dims_override_the_prediction() -> None:
    layout = get_layout("rk3588", "NC1HWC2", (1, 20, 3, 5), "int8", native_dims=[1, 3, 4, 6, 8])
    assert layout.attributes["native_dims"] == [1, 3, 4, 6, 8]
    assert layout.attributes["c2"] == 8
    assert "given" in layout.provenance["c1"]
    plane = round_up(4 * 6, 4)
    assert layout.nbytes == 3 * plane * 8
    # Within a plane the vendor's loops step by the tensor's width (5), not dims[3] (6).
    assert layout.offset_of((0, 9, 2, 3)) == 1 * plane * 8 + (2 * 5 + 3) * 8 + 1
    x = random_tensor(layout, seed=4)
    assert np.array_equal(layout.unpack(layout.pack(x)), x)


def test_c2_param_overrides_the_block() -> None:
    layout = get_layout("rk3566", "NC1HWC2", (1, 20, 3, 5), "int8", c2=4)
    # Channels still padded to the table's multiple (16 for a conv last layer) -> C1 = 32 / 4.
    assert layout.attributes["native_dims"] == [1, 8, 1, 16, 4]  # H*W = 15: flattened


# ----------------------------------------------------------------------- unlisted combinations


@pytest.mark.parametrize(
    ("args", "kwargs", "named"),
    [
        (("rv1106", "NHWC", (1, 3, 4, 4), "float16"), {}, ["rv1106", "NHWC", "float16"]),
        (
            ("rv1106", "NHWC", (1, 3, 4, 4), "float16"),
            {"role": "input"},
            ["rv1106", "input", "float16"],
        ),
        (
            ("rv1106", "NHWC", (1, 3, 4, 4), "uint8"),
            {"role": "input", "first_layer": "float16"},
            ["rv1106", "first_layer=float16"],
        ),
        (("rk2118", "NC1HWC2", (1, 3, 4, 4), "int8"), {}, ["rk2118", "int8", "NC1HWC2"]),
        (("rk2118", "NHWC", (1, 3, 4, 4), "uint8"), {"role": "input"}, ["rk2118", "uint8"]),
        (
            ("rk2118", "NHWC", (1, 3, 4, 4), "float16"),
            {"role": "input", "first_layer": "int8"},
            ["rk2118", "first_layer=int8"],
        ),
        (("rv1103b", "NHWC", (1, 3, 4, 4), "float16"), {}, ["rv1103b", "float16"]),
        (("rk3562", "NHWC", (2, 3, 4), "float16"), {}, ["rk3562", "NHWC", "4-D"]),
    ],
)
def test_unlisted_combinations_are_refused_by_name(
    args: tuple[str, str, tuple[int, ...], str], kwargs: dict[str, Any], named: list[str]
) -> None:
    with pytest.raises(LayoutError) as info:
        get_layout(*args, **kwargs)
    message = str(info.value)
    for word in named:
        assert word in message, f"{word!r} not in {message!r}"


def test_every_platform_has_an_nc1hwc2_output() -> None:
    for target in ROCKCHIP_TARGETS:
        dtype = "float16" if target == "rk2118" else "int8"
        assert get_layout(target, "NC1HWC2", (1, 5, 3, 5), dtype).name == "NC1HWC2"


def test_undefine_is_flat_for_any_rank() -> None:
    for shape in [(7,), (3, 5), (2, 3, 5), (1, 3, 4, 5), (1, 2, 3, 4, 5)]:
        layout = get_layout("rk3588", "UNDEFINE", shape, "float16")
        own = int(np.prod(shape)) * 2
        # Rank 4 is the table's row (its own size); other ranks round up to 64 bytes, as the
        # compiler does (deviation flat-output-size).
        assert layout.nbytes == (own if len(shape) == 4 else -(-own // 64) * 64)
        assert layout.padding_bytes == layout.nbytes - own
        x = random_tensor(layout, seed=len(shape))
        assert layout.unpack(layout.pack(x)).tobytes() == x.tobytes()


# ------------------------------------------------------------------- placement for any shape


def _rknn_offset(
    layout_name: str, index: tuple[int, ...], attrs: dict[str, Any], item: int, width: int
) -> int:
    """Byte offset of element ``index`` (NCHW) per the RKNN layouts' definitions."""
    n, c, h, w = index
    if layout_name == "NHWC":
        _, rows, cols, channels = attrs["dims"]
        row = attrs.get("w_stride", cols)
        return (((n * rows + h) * row + w) * channels + c) * item
    # The vendor's conversion loops: ((n*C1 + c//C2) * dims[2]*dims[3] + h*W + w) * C2 + c%C2,
    # W the tensor's own width (the native dims may be flattened).
    _, c1, native_h, native_w, c2 = attrs["native_dims"]
    plane = round_up(native_h * native_w, attrs["hw_align"])
    return (((n * c1 + c // c2) * plane + h * width + w) * c2 + c % c2) * item


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    target=st.sampled_from(ROCKCHIP_TARGETS),
    layout_name=st.sampled_from(("NHWC", "NC1HWC2")),
    role=st.sampled_from(("input", "output")),
    shape=st.tuples(st.integers(1, 2), st.integers(1, 40), st.integers(1, 5), st.integers(1, 21)),
    last_op=st.sampled_from(("conv", "other")),
)
def test_placement_follows_the_layout_definition(
    target: str, layout_name: str, role: str, shape: tuple[int, int, int, int], last_op: str
) -> None:
    dtype = "float16" if target == "rk2118" else "uint8"
    params: dict[str, Any] = {"last_op": last_op} if role == "output" else {}
    layout = get_layout(target, layout_name, shape, dtype, role=role, **params)
    attrs = layout.attributes
    item = np.dtype(dtype).itemsize
    if layout_name == "NHWC":
        assert attrs["dims"][:3] == [shape[0], shape[2], shape[3]]
    for index in np.ndindex(*shape):
        for byte in range(item):
            want = _rknn_offset(layout_name, index, attrs, item, shape[3]) + byte
            assert layout.offset_of(index, byte) == want, (index, byte)
    x = random_tensor(layout, seed=sum(shape))
    buf = layout.pack(x)
    idx = (shape[0] - 1, shape[1] - 1, shape[2] - 1, shape[3] - 1)
    at = _rknn_offset(layout_name, idx, attrs, item, shape[3])
    assert buf[at : at + item].tobytes() == x[idx].tobytes()


# ------------------------------------------------------------ flat outputs (the zoo's facts)


@pytest.mark.parametrize(
    ("target", "shape", "dtype", "size"),
    [
        # rknn-toolkit2 2.5.0's compiled files (tests/data/zoo/rknn_zoo.json.gz)
        ("rk3588", (1, 1000), "int8", 1024),
        ("rk3566", (1, 1000), "int8", 1000),
        ("rk3566", (1, 100), "int8", 104),
        ("rk3562", (1, 100), "float16", 256),
        ("rv1106", (1, 1000), "int8", 1024),
        ("rv1103b", (1, 16, 64), "int8", 1024),
        ("rk3566", (1,), "int64", 64),
        ("rk2118", (1, 5), "float16", 64),
    ],
)
def test_flat_outputs_take_the_compilers_size(
    target: str, shape: tuple[int, ...], dtype: str, size: int
) -> None:
    layout = get_layout(target, "UNDEFINE", shape, np.dtype(dtype), role="output")
    assert layout.nbytes == size
    assert "flat-output-size" in layout.provenance["size"]


def test_rv1106_lays_out_a_classifier_output_the_seed_does_not_list() -> None:
    layout = get_layout("rv1106", "UNDEFINE", (1, 1000), np.dtype("int8"), role="output")
    assert "lists no output row of rank not 4" in layout.attributes["table_row"]
    assert "non4d-outputs" in layout.attributes["table_row"]


def test_a_softmax_output_pads_its_last_axis_where_the_compiler_does() -> None:
    layout = get_layout(
        "rk3566", "UNDEFINE", (1, 1280, 21), np.dtype("float16"), role="output", last_axis_align=4
    )
    assert layout.nbytes == 61440
    values = np.arange(1280 * 21, dtype=np.float16).reshape(1, 1280, 21)
    np.testing.assert_array_equal(layout.unpack(layout.pack(values)), values)
    assert layout.pack(values).view(np.float16)[24] == values[0, 1, 0]
