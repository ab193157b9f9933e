"""Every bad request gives a LayoutError (a ValueError) whose message says what was expected and
what came, before anything is packed."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from strategies import ALL_TARGETS, KL730_FORMATS, KL730_INPUT_ONLY

from npu_hil.harness.codec import get_layout, layout_names
from npu_hil.harness.errors import LayoutError


def refused(*args: Any, **kwargs: Any) -> str:
    """The message of the LayoutError ``get_layout(*args, **kwargs)`` must raise."""
    __tracebackhide__ = True
    with pytest.raises(LayoutError) as info:
        get_layout(*args, **kwargs)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert message == info.value.message
    return message


# --------------------------------------------------------------------------- target / layout


def test_unknown_target_lists_the_known_ones() -> None:
    message = refused("kl720", "RAW_8B", (1, 3, 4, 4), "int8")
    assert "'kl720'" in message
    for target in ALL_TARGETS:
        assert target in message
    with pytest.raises(LayoutError, match="unknown target"):
        layout_names("rk9999")


@pytest.mark.parametrize(
    ("target", "layout", "listed"),
    [
        ("kl730", "RAW_32B", KL730_FORMATS),
        ("kl730", "raw_8b", KL730_FORMATS),
        ("rk3588", "NCHWc16", ("NCHW", "NHWC", "NC1HWC2", "UNDEFINE")),
        ("rdk-x5", "NV21", ("strided", "NV12", "Y")),
    ],
)
def test_unknown_layout_lists_the_target_s_layouts(
    target: str, layout: str, listed: tuple[str, ...]
) -> None:
    message = refused(target, layout, (1, 4, 4, 4), "uint8")
    assert repr(layout) in message and target in message
    for name in listed:
        assert name in message


# ---------------------------------------------------------------------------------- role


@pytest.mark.parametrize("fmt", sorted(KL730_INPUT_ONLY))
def test_kl730_input_only_formats_refused_as_outputs(fmt: str) -> None:
    dtype = "int16" if "16B" in fmt else "uint8"
    message = refused("kl730", fmt, (1, 4, 2, 8), dtype, role="output")
    assert fmt in message and "input-only" in message
    assert "RAW_8B" in message  # names the output formats there are


@pytest.mark.parametrize("role", ["in", "OUTPUT", "", None])
def test_unknown_role(role: Any) -> None:
    message = refused("kl730", "RAW_8B", (1, 3, 4, 4), "int8", role=role)
    assert "input" in message and "output" in message


def test_rockchip_role_specific_layouts() -> None:
    message = refused("rk3588", "NCHW", (1, 3, 4, 4), "uint8", role="input")
    assert "NHWC" in message and "NC1HWC2" in message and "UNDEFINE" in message


@pytest.mark.parametrize("layout", ["NV12", "Y"])
def test_horizon_images_are_inputs_only(layout: str) -> None:
    message = refused("rdk-s100", layout, (1, 6, 8), "uint8", role="output")
    assert layout in message and "strided" in message


# --------------------------------------------------------------------------------- dtype


@pytest.mark.parametrize(
    ("fmt", "dtype", "expected"),
    [
        ("RAW_8B", "int16", "int8 or uint8"),
        ("1W16C8B", "float32", "int8 or uint8"),
        ("RAW_16B", "uint8", "int16 or uint16"),
        ("4W4C8BHL", "float16", "int16 or uint16"),
        ("HW1C16B_BE", "int32", "int16 or uint16"),
    ],
)
def test_kl730_wrong_dtype(fmt: str, dtype: str, expected: str) -> None:
    message = refused("kl730", fmt, (1, 4, 2, 8), dtype, role="input")
    assert expected in message and dtype in message


@pytest.mark.parametrize(
    ("target", "layout", "dtype", "kwargs"),
    [
        ("rdk-x3", "NV12", "int8", {"role": "input"}),
        ("rdk-x3", "Y", "uint16", {"role": "input"}),
        ("rdk-s100", "strided", "bool", {}),
        ("rdk-s100", "strided", "complex64", {}),
        ("rk3588", "NCHW", "float64", {}),
        ("rk3588", "NCHW", "float32", {}),
        ("rk3588", "NHWC", "float64", {"role": "input"}),
    ],
)
def test_wrong_dtype_names_it(target: str, layout: str, dtype: str, kwargs: dict[str, Any]) -> None:
    shape = (1, 6, 8) if layout in ("NV12", "Y") else (1, 3, 4, 4)
    assert dtype in refused(target, layout, shape, dtype, **kwargs)


def test_unknown_dtype() -> None:
    assert "int7" in refused("kl730", "RAW_8B", (1, 3, 4, 4), "int7")


def test_nc1hwc2_input_of_an_other_declared_type_is_refused_as_an_input_problem() -> None:
    # The input table lists "other types" (float32 ...) for an int8 first layer; if NC1HWC2 cannot
    # serve one, the message must be about the input request, not an output precision.
    try:
        layout = get_layout("rk3588", "NC1HWC2", (1, 5, 3, 5), "float32", role="input")
    except LayoutError as exc:
        assert "output" not in str(exc), f"an input request refused with: {exc}"
        assert "float32" in str(exc)
    else:
        x = np.arange(75, dtype=np.float32).reshape(1, 5, 3, 5)
        assert np.array_equal(layout.unpack(layout.pack(x)), x)


# --------------------------------------------------------------------------------- shape


@pytest.mark.parametrize(
    ("shape", "fragment"),
    [
        ((), "at least one axis"),
        ((1, 3, 0, 4), ">= 1"),
        ((1, -3, 4, 4), ">= 1"),
        ("abc", "integers"),
        ((1, None, 4, 4), "integers"),
    ],
)
def test_bad_shapes(shape: Any, fragment: str) -> None:
    assert fragment in refused("kl730", "RAW_8B", shape, "int8")


@pytest.mark.parametrize("shape", [(1, 3, 2.5, 4), (1.5, 3, 4, 4)])
def test_non_integer_shape_is_refused(shape: tuple[float, ...]) -> None:
    message = refused("kl730", "RAW_8B", shape, "int8")
    assert "2.5" in message or "1.5" in message


def test_rank_limits() -> None:
    assert "rank" in refused("kl730", "RAW_8B", (1, 3, 4, 4, 1), "int8")
    assert "4-D" in refused("rk3588", "NHWC", (1, 3, 4), "int8", role="input")
    assert "4-D" in refused("rk3588", "NC1HWC2", (3, 4), "int8")
    assert "(N, rows, W)" in refused("rdk-s100", "Y", (1, 1, 4, 4), "uint8", role="input")


@pytest.mark.parametrize("c", [1, 3, 5])
def test_keep_a_needs_four_channels(c: int) -> None:
    message = refused("kl730", "HW4C8B_KEEP_A", (1, c, 4, 4), "uint8", role="input")
    assert f"C = {c}" in message and "4" in message


@pytest.mark.parametrize("c", [1, 2, 5])
def test_drop_a_needs_three_or_four_channels(c: int) -> None:
    message = refused("kl730", "HW4C8B_DROP_A", (1, c, 4, 4), "uint8", role="input")
    assert f"C = {c}" in message


# ------------------------------------------------------------------------- pack / unpack


def test_pack_wrong_shape_and_dtype() -> None:
    layout = get_layout("kl730", "1W16C8B", (1, 20, 3, 5), "int8")
    with pytest.raises(LayoutError, match=r"shape \(1, 20, 3, 5\), got \(1, 20, 5, 3\)"):
        layout.pack(np.zeros((1, 20, 5, 3), np.int8))
    with pytest.raises(LayoutError, match="expected dtype int8, got uint8"):
        layout.pack(np.zeros((1, 20, 3, 5), np.uint8))
    with pytest.raises(LayoutError, match="expected dtype int8, got int64"):
        layout.pack(np.zeros((1, 20, 3, 5), np.int64).tolist())


def test_pack_of_a_non_native_byte_order() -> None:
    """A big-endian uint16 array holds the same values: pack it like the native one, or refuse
    it with a message that shows the difference (not "expected uint16, got uint16")."""
    layout = get_layout("rdk-s100", "strided", (1, 3, 4, 5), "uint16")
    x = np.arange(60, dtype="<u2").reshape(1, 3, 4, 5)
    try:
        buf = layout.pack(x.astype(">u2"))
    except LayoutError as exc:
        message = str(exc)
        assert "got uint16" not in message or ">" in message or "big" in message, message
    else:
        assert buf.tobytes() == layout.pack(x).tobytes()


@pytest.mark.parametrize("delta", [-1, -15, -16, 1, 17])
def test_unpack_wrong_length_says_how_far_off(delta: int) -> None:
    layout = get_layout("kl730", "4W4C8BHL", (1, 3, 3, 5), "int16")
    buf = np.zeros(layout.nbytes + delta, np.uint8)
    how = f"{abs(delta)} bytes {'short' if delta < 0 else 'long'}"
    with pytest.raises(LayoutError, match=how) as info:
        layout.unpack(buf)
    assert str(layout.nbytes) in str(info.value)
    with pytest.raises(LayoutError, match=how):
        layout.unpack(bytes(buf))


@pytest.mark.parametrize("buffer", [5, None, [0, 1, 2], "text"])
def test_unpack_needs_a_bytes_like_buffer(buffer: Any) -> None:
    layout = get_layout("kl730", "RAW_8B", (1, 1, 1, 4), "int8")
    with pytest.raises(LayoutError, match="bytes-like"):
        layout.unpack(buffer)


# ------------------------------------------------------------------------------ parameters


@pytest.mark.parametrize(
    ("args", "kwargs", "accepted"),
    [
        (("kl730", "RAW_8B", (1, 3, 4, 4), "int8"), {"w_stride": 8}, "stride_npu"),
        (("rk3588", "NCHW", (1, 3, 4, 4), "int8"), {"w_stride": 8}, "size"),
        (
            ("rk3588", "NHWC", (1, 3, 4, 4), "int8"),
            {"role": "input", "last_op": "conv"},
            "w_stride",
        ),
        (("rdk-x3", "strided", (1, 3, 4, 4), "int8"), {"stride_npu": [1]}, "aligned_shape"),
        (("rdk-x3", "NV12", (6, 8), "uint8"), {"role": "input", "tensor_layout": "NHWC"}, "stride"),
    ],
)
def test_unknown_param_names_the_accepted_ones(
    args: tuple[Any, ...], kwargs: dict[str, Any], accepted: str
) -> None:
    message = refused(*args, **kwargs)
    unknown = next(k for k in kwargs if k != "role")
    assert "unknown parameter" in message and unknown in message and accepted in message


@pytest.mark.parametrize("value", ["abc", None, [24], "24px"])
def test_w_stride_must_be_an_integer(value: Any) -> None:
    message = refused("rk3566", "NHWC", (1, 3, 2, 17), "uint8", role="input", w_stride=value)
    assert "w_stride" in message and "integer" in message


@pytest.mark.parametrize("value", [24.5, 17.9, "24.5"])
def test_fractional_w_stride_is_refused_not_truncated(value: Any) -> None:
    message = refused("rk3566", "NHWC", (1, 3, 2, 17), "uint8", role="input", w_stride=value)
    assert "w_stride" in message


def test_w_stride_smaller_than_the_width() -> None:
    message = refused("rk3566", "NHWC", (1, 3, 2, 17), "uint8", role="input", w_stride=16)
    assert "16" in message and "17" in message


@pytest.mark.parametrize(
    ("args", "kwargs", "fragment"),
    [
        (
            ("rdk-s100", "strided", (1, 3, 4, 4), "uint16"),
            {"stride": [96, 32, 8]},
            "must have 4 values",
        ),
        (
            ("rdk-s100", "strided", (1, 3, 4, 4), "uint16"),
            {"stride": [96, 32, 8, 2, 1]},
            "must have 4 values",
        ),
        (
            ("rdk-s100", "strided", (1, 3, 4, 4), "uint16"),
            {"stride": "a,b,c,d"},
            "list of integers",
        ),
        (
            ("rdk-s100", "strided", (1, 3, 4, 4), "uint16"),
            {"aligned_shape": [1, 3, 4]},
            "must have 4 values",
        ),
        (
            ("kl730", "RAW_16B", (1, 1, 4, 4), "int16"),
            {"stride_npu": [16, 16, 4]},
            "must have 4 values",
        ),
        (
            ("rk3588", "NC1HWC2", (1, 3, 4, 4), "int8"),
            {"native_dims": [1, 1, 4, 4]},
            "must have 5 values",
        ),
    ],
)
def test_param_lists_of_the_wrong_length(
    args: tuple[Any, ...], kwargs: dict[str, Any], fragment: str
) -> None:
    assert fragment in refused(*args, **kwargs)


def test_fractional_strides_are_refused_not_truncated() -> None:
    message = refused("rdk-s100", "strided", (1, 3, 4, 4), "uint16", stride=[96.5, 32, 8, 2])
    assert "stride" in message


def test_overlapping_strides() -> None:
    # Rows 4 bytes apart hold 4 two-byte elements: they would overlap.
    message = refused("rdk-s100", "strided", (1, 3, 4, 4), "uint16", stride=[1000, 64, 4, 2])
    assert "overlap" in message
    message = refused("kl730", "RAW_8B", (1, 3, 4, 4), "int8", stride_npu=[48, 8, 4, 1])
    assert "overlap" in message
    # A stride[0] too small for the rest is refused too.
    refused("rdk-s100", "strided", (1, 3, 4, 4), "uint16", stride=[48, 16, 4, 2])


def test_strides_must_be_positive_and_end_in_the_element_size() -> None:
    assert "positive" in refused(
        "rdk-s100", "strided", (1, 3, 4, 4), "uint16", stride=[96, 32, -8, 2]
    )
    message = refused("rdk-s100", "strided", (1, 3, 4, 4), "uint16", stride=[192, 64, 16, 4])
    assert "element size 2" in message


def test_aligned_shape_and_stride_conflicts() -> None:
    assert "smaller than validShape" in refused(
        "rdk-x3", "strided", (1, 3, 5, 7), "int8", aligned_shape=[1, 3, 4, 32]
    )
    assert "not both" in refused(
        "rdk-x3",
        "strided",
        (1, 3, 5, 7),
        "int8",
        aligned_shape=[1, 3, 6, 32],
        stride=[576, 192, 32, 1],
    )


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("rdk-s100", "strided", (1, 3, 4, 4), "uint16"), {"aligned_byte_size": 100}),
        (("rdk-s100", "NV12", (6, 8), "uint8"), {"role": "input", "aligned_byte_size": 100}),
        (("rk3588", "NC1HWC2", (1, 3, 4, 4), "int8"), {"size": 10}),
        (("rk3588", "NHWC", (1, 3, 4, 4), "int8"), {"role": "input", "size_with_stride": 10}),
        (("rk3588", "NCHW", (1, 3, 4, 4), "int8"), {"size": 47}),
    ],
)
def test_reported_sizes_too_small(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    assert "smaller than" in refused(*args, **kwargs)


@pytest.mark.parametrize(
    ("args", "kwargs", "fragment"),
    [
        (("kl730", "RAW_16B", (1, 1, 4, 4), "int16"), {"value_bits": 12}, "15 or 16"),
        (
            ("kl730", "HW1C16B_BE", (1, 1, 4, 4), "int16"),
            {"role": "input", "value_bits": 15},
            "little-endian",
        ),
        (("rdk-x3", "strided", (1, 3, 4, 4), "int8"), {"tensor_layout": "NC1HWC2"}, "NCHW or NHWC"),
        (("rdk-x3", "NV12", (6, 40), "uint8"), {"role": "input", "stride": 32}, ">= W"),
        (("rk3588", "NC1HWC2", (1, 3, 4, 4), "int8"), {"hw_align": 0}, "hw_align"),
        (("rk3588", "NC1HWC2", (1, 3, 4, 4), "int8"), {"c2": 0}, "c2"),
        (("rk3588", "NC1HWC2", (1, 3, 4, 4), "int8"), {"last_op": "relu"}, "conv_sigmoid"),
        (
            ("rk3588", "NC1HWC2", (1, 3, 4, 4), "int8"),
            {"native_dims": [1, 1, 4, 4, 2]},
            "cannot hold",
        ),
        (
            ("rk3588", "NC1HWC2", (1, 3, 4, 4), "int8"),
            {"native_dims": [2, 1, 4, 4, 16]},
            "cannot hold",
        ),
        (
            ("rk3588", "NHWC", (1, 3, 4, 4), "int8"),
            {"role": "input", "first_layer": "int4"},
            "first_layer",
        ),
    ],
)
def test_bad_param_values(args: tuple[Any, ...], kwargs: dict[str, Any], fragment: str) -> None:
    assert fragment in refused(*args, **kwargs)


# ---------------------------------------------------------------------------------- locate


@pytest.mark.parametrize("offset", [-1, -100])
def test_locate_negative_offset(offset: int) -> None:
    layout = get_layout("kl730", "RAW_8B", (1, 3, 4, 4), "int8")
    with pytest.raises(LayoutError, match="outside the buffer of 48 bytes"):
        layout.locate(offset)


def test_locate_past_the_end() -> None:
    layout = get_layout("rdk-s100", "strided", (1, 3, 212, 212), "uint16")
    layout.locate(layout.nbytes - 1)
    for offset in (layout.nbytes, layout.nbytes + 1, 10**9):
        with pytest.raises(LayoutError, match=f"offset {offset} is outside"):
            layout.locate(offset)


def test_locate_refuses_a_fractional_offset() -> None:
    layout = get_layout("kl730", "RAW_8B", (1, 3, 4, 4), "int8")
    with pytest.raises(LayoutError):
        layout.locate(2.5)  # type: ignore[arg-type]


def test_locate_with_a_numpy_offset_gives_plain_json_ready_values() -> None:
    """Offsets usually come from numpy (``np.flatnonzero(buf != expected)``); the Location must
    still hold plain ints so a report can ``json.dumps(loc.to_dict())``."""
    layout = get_layout("kl730", "1W16C8BHL", (1, 20, 3, 5), "int16")
    mismatch = np.flatnonzero(np.arange(layout.nbytes) == 40)
    loc = layout.locate(mismatch[0])
    assert loc.index is not None
    assert all(type(i) is int for i in loc.index), loc.index
    json.dumps(loc.to_dict())
