"""Horizon BPU layouts against seeds/003: the worked example, the padding test, NV12/Y rows and
the 32-byte first-address rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import HORIZON_TARGETS, Case, horizon_cases, random_tensor

from npu_hil.harness.codec import aligned_empty, get_layout
from npu_hil.harness.codec.buffers import DEFAULT_ALIGN
from npu_hil.harness.errors import LayoutError
from npu_hil.targets import horizon


def aligned_zeros(nbytes: int, align: int = DEFAULT_ALIGN) -> np.ndarray:
    """Like ``aligned_empty``, filled with zeros."""
    buf = aligned_empty(nbytes, align)
    buf.fill(0)
    return buf


def is_aligned(array: np.ndarray, align: int = DEFAULT_ALIGN) -> bool:
    """True when the array's first byte is on an ``align`` boundary."""
    return int(array.ctypes.data) % align == 0


# seeds/003: HB_DNN_TENSOR_TYPE_U16, validShape [1, 3, 212, 212], stride [301056, 100352, 448, 2]
EXAMPLE_SHAPE = (1, 3, 212, 212)
EXAMPLE_STRIDE = (301056, 100352, 448, 2)


@pytest.mark.parametrize("given_stride", [False, True], ids=["predicted", "device-reported"])
def test_seed_worked_example(given_stride: bool) -> None:
    params = {"stride": list(EXAMPLE_STRIDE)} if given_stride else {}
    layout = get_layout("rdk-s100", "strided", EXAMPLE_SHAPE, "uint16", role="input", **params)
    assert layout.strides == EXAMPLE_STRIDE
    assert layout.attributes["stride"] == list(EXAMPLE_STRIDE)
    assert layout.attributes["predicted_stride"] == list(EXAMPLE_STRIDE)
    assert layout.attributes["alignedByteSize"] == 301056
    assert layout.nbytes == 301056
    assert layout.attributes["needs_padding"] is True
    assert layout.attributes["tensorType"] == "U16"
    assert ("given" in layout.provenance["stride"]) == given_stride
    # 448 = 2 * 224: columns 212..223 of each row are padding; rows 212..223 of each plane too.
    assert layout.locate(448).index == (0, 0, 1, 0)
    assert layout.locate(100352).index == (0, 1, 0, 0)
    assert layout.locate(2 * 211).index == (0, 0, 0, 211)
    assert layout.locate(2 * 212).padding
    assert layout.locate(212 * 448).padding
    assert layout.offset_of((0, 2, 211, 211), 1) == 2 * 100352 + 211 * 448 + 211 * 2 + 1
    padding = 301056 - 3 * 212 * 212 * 2
    assert layout.padding_bytes == padding
    x = random_tensor(layout, seed=3)
    buf = layout.pack(x)
    assert buf.ctypes.data % 32 == 0
    assert not buf[layout.padding_mask()].any()
    assert np.array_equal(layout.unpack(buf), x)
    assert np.array_equal(buf[448 : 448 + 2 * 212].view(np.uint16), x[0, 0, 1])


def test_needs_padding_reads_the_seed_formula_with_the_element_size() -> None:
    assert horizon.needs_padding(EXAMPLE_SHAPE, EXAMPLE_STRIDE, 2) is True
    # Dense: prod(validShape[1:]) * element size == stride[0].
    assert horizon.needs_padding((1, 3, 224, 224), (301056, 100352, 448, 2), 2) is False
    assert horizon.needs_padding((2, 3, 4, 8), (96, 32, 8, 1), 1) is False
    assert horizon.needs_padding((1, 3, 4, 8), (384, 128, 32, 4), 4) is False
    assert horizon.needs_padding((1, 3, 4, 8), (400, 128, 32, 4), 4) is True


def test_dense_layout_reports_no_padding() -> None:
    layout = get_layout("rdk-s100", "strided", (1, 3, 64, 64), "float32")
    assert layout.attributes["needs_padding"] is False
    assert layout.padding_bytes == 0
    assert not layout.padding_mask().any()
    assert layout.strides == (3 * 64 * 64 * 4, 64 * 64 * 4, 64 * 4, 4)


@pytest.mark.parametrize("target", ["rdk-x3", "rdk-x5"])
def test_aligned_shape_gives_contiguous_strides_over_it(target: str) -> None:
    layout = get_layout(target, "strided", (1, 3, 5, 7), "int8", aligned_shape=[1, 3, 6, 32])
    assert layout.strides == (3 * 6 * 32, 6 * 32, 32, 1)
    assert layout.nbytes == 3 * 6 * 32
    assert "aligned_shape" in layout.provenance["stride"]
    assert layout.attributes["needs_padding"] is True
    assert layout.locate(32).index == (0, 0, 1, 0)
    assert layout.locate(7).padding
    assert layout.locate(5 * 32).padding  # row 5 of plane 0: H padded to 6


@pytest.mark.parametrize("target", ["rdk-x3", "rdk-x5"])
def test_x3_x5_prediction_pads_h_to_2_and_w_to_32(target: str) -> None:
    nchw = get_layout(target, "strided", (1, 3, 5, 7), "int8")
    assert nchw.strides == (3 * 6 * 32, 6 * 32, 32, 1)
    nhwc = get_layout(target, "strided", (1, 5, 7, 3), "int8", tensor_layout="NHWC")
    assert nhwc.strides == (6 * 32 * 3, 32 * 3, 3, 1)
    same = get_layout(target, "strided", (1, 3, 5, 7), "int8", aligned_shape=[1, 3, 6, 32])
    assert same.dims == nchw.dims and same.nbytes == nchw.nbytes


def test_other_ranks_are_predicted_dense() -> None:
    for shape in [(7,), (3, 5), (2, 3, 5), (1, 2, 3, 4, 5)]:
        layout = get_layout("rdk-s100", "strided", shape, "int16")
        assert layout.padding_bytes == 0, shape
        assert layout.nbytes == int(np.prod(shape)) * 2


def test_aligned_byte_size_sets_the_buffer_size() -> None:
    layout = get_layout("rdk-s100", "strided", (1, 3, 4, 4), "uint8", aligned_byte_size=4096)
    assert layout.nbytes == 4096
    assert layout.attributes["alignedByteSize"] == 4096
    tail = layout.padding_mask()[3 * 32 * 32 :]
    assert tail.all()
    # 0 (or -1): not reported, the strides decide.
    assert (
        get_layout("rdk-s100", "strided", (1, 3, 4, 4), "uint8", aligned_byte_size=0).nbytes
        == 3 * 32 * 32
    )


# ------------------------------------------------------------------------------------ NV12 / Y


@pytest.mark.parametrize("target", HORIZON_TARGETS)
@pytest.mark.parametrize("w", [2, 10, 30, 32, 34, 64, 100])
@pytest.mark.parametrize("h", [2, 4, 6])
def test_nv12_rows_are_32_byte_aligned(target: str, h: int, w: int) -> None:
    rows = 3 * h // 2
    layout = get_layout(target, "NV12", (1, rows, w), "uint8", role="input")
    row_stride = -(-w // 32) * 32
    assert layout.attributes["row_stride"] == row_stride
    assert layout.strides == (rows * row_stride, row_stride, 1)
    assert layout.nbytes == rows * row_stride
    assert layout.padding_bytes == rows * (row_stride - w)
    x = random_tensor(layout, seed=h * 1000 + w)
    buf = layout.pack(x)
    assert buf.ctypes.data % 32 == 0
    for r in range(rows):
        assert np.array_equal(buf[r * row_stride : r * row_stride + w], x[0, r])
        assert not buf[r * row_stride + w : (r + 1) * row_stride].any()
    assert np.array_equal(layout.unpack(buf), x)


@pytest.mark.parametrize("target", HORIZON_TARGETS)
def test_nv12_uses_a_given_row_stride_and_ignores_dynamic(target: str) -> None:
    given_stride = get_layout(target, "NV12", (6, 10), "uint8", role="input", stride=64)
    assert given_stride.attributes["row_stride"] == 64
    assert given_stride.strides == (64, 1)
    # A reported stride off the 32-byte rule is the device's claim (checked by the diff), used.
    odd = get_layout(target, "NV12", (6, 10), "uint8", role="input", stride=40)
    assert odd.attributes["row_stride"] == 40
    assert odd.attributes["predicted_row_stride"] == 32
    dynamic = get_layout(target, "NV12", (6, 10), "uint8", role="input", stride=-1)
    assert dynamic.attributes["row_stride"] == 32
    assert dynamic.attributes["stride"] == [-1, -1, -1, -1]


@pytest.mark.parametrize("target", HORIZON_TARGETS)
@pytest.mark.parametrize(
    ("shape", "why"),
    [
        ((1, 6, 9), "odd W"),
        ((1, 6, 33), "odd W"),
        ((1, 7, 10), "rows not 3H/2"),
        ((1, 4, 10), "odd H (rows 4 = 3H/2 would need H = 8/3)"),
        ((1, 9, 11), "odd W"),
    ],
)
def test_nv12_refuses_odd_sizes(target: str, shape: tuple[int, ...], why: str) -> None:
    with pytest.raises(LayoutError, match="even H and W"):
        get_layout(target, "NV12", shape, "uint8", role="input")


def test_nv12_refuses_odd_h_given_as_rows() -> None:
    # H = 3 would make rows 4.5; H = 5 rows 7.5: the nearest integer row counts are refused.
    for rows in (4, 5, 7, 8):
        with pytest.raises(LayoutError, match="even H and W"):
            get_layout("rdk-s100", "NV12", (rows, 8), "uint8", role="input")


@pytest.mark.parametrize("target", HORIZON_TARGETS)
def test_y_takes_any_size(target: str) -> None:
    layout = get_layout(target, "Y", (2, 5, 7), "uint8", role="input")
    assert layout.strides == (5 * 32, 32, 1)
    x = random_tensor(layout, seed=5)
    assert np.array_equal(layout.unpack(layout.pack(x)), x)


# ------------------------------------------------------------------------ 32-byte first address


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(case=horizon_cases(), seed=st.integers(0, 2**32 - 1))
def test_every_buffer_is_32_byte_aligned(case: Case, seed: int) -> None:
    layout = case.build()
    assert layout.attributes["first_address_align"] == 32
    buf = layout.pack(random_tensor(layout, seed))
    assert buf.ctypes.data % 32 == 0
    assert is_aligned(buf)
    assert is_aligned(layout.unpack(buf))


SIZES = [1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 256, 1000, 4095, 4097, 65537]
ALIGNS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 4096]


@pytest.mark.parametrize("align", ALIGNS)
def test_aligned_empty_alignment(align: int) -> None:
    keep = []  # hold every buffer so the allocator cannot hand back the same block
    for n in SIZES:
        buf = aligned_empty(n, align=align)
        keep.append(buf)
        assert buf.dtype == np.uint8 and buf.shape == (n,)
        assert buf.ctypes.data % align == 0, (n, align)
        assert is_aligned(buf, align)
        assert buf.flags.c_contiguous and buf.flags.writeable
        zeros = aligned_zeros(n, align=align)
        keep.append(zeros)
        assert zeros.ctypes.data % align == 0 and not zeros.any()


def test_aligned_empty_default_is_32() -> None:
    for n in SIZES:
        assert aligned_empty(n).ctypes.data % 32 == 0


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 1 << 16), log_align=st.integers(0, 12))
def test_aligned_empty_alignment_property(n: int, log_align: int) -> None:
    align = 1 << log_align
    buf = aligned_empty(n, align=align)
    assert buf.size == n and buf.ctypes.data % align == 0
    buf[:] = 0xFF  # the whole view is writable memory of its own


@pytest.mark.parametrize("align", [32, 64, 4096])
def test_aligned_empty_of_zero_bytes_is_aligned_too(align: int) -> None:
    # The docstring promises an aligned data pointer for every nbytes. numpy gives an empty slice
    # the data pointer of its base, so the shift must not be lost for nbytes = 0.
    keep = [np.empty(k, np.uint8) for k in range(1, 64)]  # vary where the next block lands
    for _ in range(8):
        buf = aligned_empty(0, align=align)
        keep.append(buf)
        assert buf.size == 0
        assert buf.ctypes.data % align == 0, f"aligned_empty(0, {align}) at {buf.ctypes.data:#x}"


@pytest.mark.parametrize("align", [0, 3, 24, -32])
def test_aligned_empty_refuses_non_power_of_two(align: int) -> None:
    with pytest.raises(ValueError, match="power of two"):
        aligned_empty(8, align=align)


def test_aligned_empty_refuses_negative_size() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        aligned_empty(-1)


@pytest.mark.parametrize(
    ("shape", "dtype", "params"),
    [
        ((1, 3, 212, 212), "uint16", {}),
        ((1, 3, 212, 212), "uint16", {"stride": [301056, 100352, 448, 2]}),
        ((1, 3, 224, 224), "uint8", {"stride": [150528, 50176, 224, 1]}),
        ((1, 3, 224, 224), "uint8", {}),
        ((2, 8), "int8", {}),
        ((1, 4, 6, 8), "int16", {"aligned_shape": [1, 4, 6, 8]}),
        ((1, 4, 6, 8), "int16", {"aligned_shape": [1, 4, 6, 16]}),
    ],
)
def test_layout_needs_padding_agrees_with_the_seed_formula(
    shape: tuple[int, ...], dtype: str, params: dict[str, object]
) -> None:
    from npu_hil.targets.horizon import needs_padding

    # The seed's test, generalised to any layout: the buffer holds bytes no element reaches.
    layout = get_layout("rdk-s100", "strided", shape, dtype, **params)
    seed = needs_padding(shape, layout.strides, np.dtype(dtype).itemsize)
    assert (layout.padding_bytes > 0) == seed == layout.attributes["needs_padding"]
