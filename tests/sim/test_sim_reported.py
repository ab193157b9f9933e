"""layout_from_report: the host unpacks with what the device says. Sim attributes round-trip
through it, and hand-written reports in each runtime's own spelling build the right layout."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sim_helpers import compare, inputs_for, native_dtype, run_sim

from npu_hil.harness.codec import get_layout
from npu_hil.harness.codec.reported import dtype_from_report, layout_from_report, predicted_layout
from npu_hil.harness.diff.attributes import diff_attributes, disagreements
from npu_hil.harness.errors import LayoutError
from npu_hil.harness.models import build
from npu_hil.harness.sim import SIM_TARGETS


@pytest.mark.parametrize("model_name", ["conv3x3", "deconv"])
@pytest.mark.parametrize("target", SIM_TARGETS)
def test_sim_attributes_round_trip(target: str, model_name: str) -> None:
    model = build(model_name, (2, 5, 3, 7) if target != "rk3588" else (1, 3, 3, 7))
    given = inputs_for(model, native_dtype(target), seed=13)
    run = run_sim(target, model, given)
    for item in compare(target, model, given, run):
        device = item.device
        # No shape given: the report alone determines the tensor, except an RKNN NC1HWC2 one
        # (its dims may be flattened and its n_elems counts padding, as the real runtime's do).
        if device.attributes.get("fmt") == "NC1HWC2":
            with pytest.raises(LayoutError, match="pass the tensor's shape"):
                layout_from_report(target, device.role, device.attributes)
            layout = layout_from_report(target, device.role, device.attributes, shape=device.shape)
        else:
            layout = layout_from_report(target, device.role, device.attributes)
        assert layout.shape == tuple(device.shape)
        reported_dtype = dtype_from_report(target, device.attributes)
        assert layout.dtype == np.dtype(device.dtype) == reported_dtype
        assert layout.nbytes == device.data.size
        assert np.array_equal(layout.unpack(device.data), item.expected.values)
        assert np.array_equal(layout.padding_mask(), device.codec_layout.padding_mask())


# ------------------------------------------------------------------------------ RKNN


def rknn_attr(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {"index": 0, "name": "t", "qnt_type": "AFFINE_ASYMMETRIC"}
    return {**base, **fields}


def test_rknn_nc1hwc2_plane_is_padded_to_4() -> None:
    attr = rknn_attr(
        n_dims=5, dims=[1, 2, 3, 5, 16], n_elems=480, size=512, fmt="NC1HWC2", type="INT8"
    )
    layout = layout_from_report("rk3588", "output", attr, shape=(1, 20, 3, 5))
    assert layout.shape == (1, 20, 3, 5) and layout.nbytes == 512
    assert layout.offset_of((0, 16, 0, 0)) == 16 * 16  # plane of 16 pixels, not 15
    assert layout.locate(15 * 16).padding


def test_rknn_flattened_native_dims_place_elements_as_the_vendor_reads_them() -> None:
    # What librknnrt 1.6.0 reports for a 1x3x3x15 int8 conv output on RK3566 (H*W = 45).
    attr = rknn_attr(n_dims=5, dims=[1, 2, 1, 48, 8], n_elems=768, size=768, fmt=2, type=2)
    layout = layout_from_report("rk3566", "output", attr, shape=(1, 3, 3, 15))
    for index in [(0, 0, 0, 0), (0, 2, 1, 4), (0, 1, 2, 14)]:
        _, c, h, w = index
        assert layout.offset_of(index) == ((c // 8) * 48 + h * 15 + w) * 8 + c % 8
    assert layout.locate(45 * 8).padding  # the plane's padding


def test_rknn_nc1hwc2_needs_a_shape_and_enough_size() -> None:
    attr = {"dims": [1, 2, 3, 5, 16], "fmt": "NC1HWC2", "type": "INT8", "size": 512}
    with pytest.raises(LayoutError, match="pass the tensor's shape"):
        layout_from_report("rk3588", "output", attr)
    layout = layout_from_report("rk3588", "output", attr, shape=(1, 17, 3, 5))
    assert layout.shape == (1, 17, 3, 5) and layout.nbytes == 512
    with pytest.raises(LayoutError, match="size 480 is smaller than the 512 bytes"):
        layout_from_report("rk3588", "output", {**attr, "size": 480}, shape=(1, 17, 3, 5))
    # A size too small for the dims (RV1103B's unfused Sigmoid) is named, never misread.
    short = {"dims": [1, 1, 1, 52, 8], "fmt": 2, "type": 2, "size": 156}
    with pytest.raises(LayoutError, match=r"size 156 is smaller than the 416 bytes native_dims"):
        layout_from_report("rv1103b", "output", short, shape=(1, 3, 3, 17))


def test_rknn_header_spellings() -> None:
    attr = {
        "n_dims": 4,
        "dims": [1, 5, 7, 3] + [0] * 12,  # the header's dims[16]
        "fmt": 1,  # RKNN_TENSOR_NHWC
        "type": "RKNN_TENSOR_UINT8",
        "w_stride": 0,  # 0: equal to the width
        "size_with_stride": 105,
        "qnt_type": "RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC",
    }
    layout = layout_from_report("rk3568", "input", attr)
    assert (layout.name, layout.shape, layout.dtype.name) == ("NHWC", (1, 3, 5, 7), "uint8")
    assert layout.nbytes == 105
    with pytest.raises(LayoutError, match="not one of"):
        layout_from_report("rk3568", "input", {**attr, "fmt": 7})
    # The runtime's numbers (rknn_tensor_type: 3 is UINT8) read as the names do.
    assert layout_from_report("rk3568", "input", {**attr, "type": 3}).dtype.name == "uint8"
    with pytest.raises(LayoutError, match="type 99 is not one of"):
        layout_from_report("rk3568", "input", {**attr, "type": 99})
    with pytest.raises(LayoutError, match="no codec layout"):
        layout_from_report("rk3568", "input", {**attr, "type": 10})  # INT4


def test_the_devices_w_stride_wins_and_the_prediction_disagrees() -> None:
    attr = {
        "dims": [1, 5, 7, 3],
        "fmt": "NHWC",
        "type": "UINT8",
        "w_stride": 24,
        "size_with_stride": 5 * 24 * 3,
        "n_elems": 105,
        "qnt_type": "AFFINE_ASYMMETRIC",
    }
    layout = layout_from_report("rk3588", "input", attr)
    assert layout.offset_of((0, 0, 1, 0)) == 24 * 3
    findings = disagreements(diff_attributes(predicted_layout("rk3588", "input", attr), attr))
    assert {f.attribute for f in findings} == {"w_stride", "size_with_stride"}
    assert "16" in next(f.message for f in findings if f.attribute == "w_stride")


def test_rknn_nhwc_output_channel_padding() -> None:
    attr = {"dims": [1, 3, 5, 16], "n_elems": 75, "fmt": "NHWC", "type": "INT8", "size": 240}
    layout = layout_from_report("rk3588", "output", attr)
    assert layout.shape == (1, 5, 3, 5) and layout.offset_of((0, 0, 0, 1)) == 16
    # The device's own padding wins, and the prediction (unpadded on RK3588: deviation
    # nhwc-output-unpadded) disagrees by name.
    padded = {**attr, "dims": [1, 3, 5, 24], "size": 360}
    layout = layout_from_report("rk3588", "output", padded)
    assert layout.offset_of((0, 0, 0, 1)) == 24
    predicted = predicted_layout("rk3588", "output", padded, shape=(1, 5, 3, 5))
    findings = {f.attribute: f for f in disagreements(diff_attributes(predicted, padded))}
    assert findings["dims"].predicted == [1, 3, 5, 5]
    assert "nhwc-output-unpadded" in findings["dims"].rule and "x16" in findings["dims"].rule
    with pytest.raises(LayoutError, match="cannot hold"):
        layout_from_report("rk3588", "output", {**attr, "dims": [1, 3, 5, 4]}, shape=(1, 5, 3, 5))


def test_rknn_float16_first_layer_is_read_off_the_type() -> None:
    # librknnrt reports AFFINE quantization on a float16 model's input too (observed), so only
    # the input's type says the first layer is float16.
    attr = {"dims": [1, 5, 7, 3], "fmt": 1, "type": 1, "qnt_type": 2}
    layout = layout_from_report("rk3588", "input", attr)
    assert layout.attributes["first_layer"] == "float16"
    assert layout.attributes["w_stride"] == 8  # the float16 row: width aligned to 8


# --------------------------------------------------------------------------- Horizon


def test_horizon_codes_and_strides() -> None:
    props = {
        "validShape": [1, 3, 5, 7],
        "tensorLayout": 2,  # NCHW
        "tensorType": 2,  # S8 in the S100 header (tests/data/abi)
        "stride": [3 * 6 * 64, 6 * 64, 64, 1],
        "alignedByteSize": 3 * 6 * 64,
    }
    layout = layout_from_report("rdk-s100", "output", props)
    assert (layout.name, layout.dtype.name) == ("strided", "int8")
    assert layout.strides == (1152, 384, 64, 1)
    named = {**props, "tensorType": "HB_DNN_TENSOR_TYPE_S8", "tensorLayout": "NCHW"}
    assert layout_from_report("rdk-s100", "output", named).strides == layout.strides
    # The X3/X5 header numbers S8 as 8 (its image types come first); on S100 8 is S32.
    x5 = layout_from_report("rdk-x5", "output", {**props, "tensorType": 8})
    assert x5.dtype.name == "int8"
    s32 = {**props, "tensorType": 8, "stride": [4608, 1536, 256, 4], "alignedByteSize": 4608}
    assert layout_from_report("rdk-s100", "output", s32).dtype.name == "int32"


def test_x3x5_layout_comes_from_the_aligned_shape() -> None:
    # The X3/X5 documentation places the data by validShape inside alignedShape; strides that
    # contradict it are refused, not picked over it.
    props = {
        "validShape": [1, 3, 5, 7],
        "alignedShape": [1, 3, 5, 16],
        "tensorLayout": "NCHW",
        "tensorType": "S8",
        "stride": [0, 0, 0, 0],
        "alignedByteSize": 3 * 5 * 16,
    }
    layout = layout_from_report("rdk-x3", "output", props)
    assert layout.strides == (3 * 5 * 16, 5 * 16, 16, 1)
    agreeing = {**props, "stride": [240, 80, 16, 1]}
    assert layout_from_report("rdk-x5", "output", agreeing).strides == layout.strides
    with pytest.raises(LayoutError, match="contradicts alignedShape"):
        layout_from_report("rdk-x5", "output", {**props, "stride": [240, 80, 16, 2]})
    # S100 has no alignedShape: its strides are the layout.
    wide = {**props, "stride": [480, 160, 32, 1], "alignedByteSize": 480}
    s100 = layout_from_report("rdk-s100", "output", wide)
    assert s100.strides == (480, 160, 32, 1)


def test_x3x5_nv12_rows_come_from_the_aligned_shape() -> None:
    # NV12 / NV12_SEPARATE model inputs report stride 0 on X3/X5; alignedShape's W is the pitch.
    props = {
        "validShape": [1, 3, 4, 6],
        "alignedShape": [1, 3, 4, 32],
        "tensorLayout": "NCHW",
        "tensorType": "NV12_SEPARATE",
        "stride": [0, 0, 0, 0],
        "alignedByteSize": 192,
    }
    for kind in ("NV12_SEPARATE", 2, "NV12", 1):
        layout = layout_from_report("rdk-x5", "input", {**props, "tensorType": kind})
        assert (layout.name, layout.shape) == ("NV12", (1, 6, 6))
        assert layout.offset_of((0, 1, 0)) == 32
        assert layout.nbytes == 192


def test_horizon_aligned_shape_when_strides_are_missing() -> None:
    props = {
        "validShape": [1, 3, 5, 7],
        "alignedShape": [1, 3, 6, 32],
        "tensorType": "U8",
        "stride": [-1, -1, -1, -1],
    }
    layout = layout_from_report("rdk-x3", "input", props)
    assert layout.strides == (3 * 6 * 32, 6 * 32, 32, 1)


def test_horizon_image_row_stride_from_the_aligned_size() -> None:
    props = {
        "validShape": [2, 3, 4, 10],
        "tensorType": "NV12",
        "stride": [-1, -1, -1, -1],
        "alignedByteSize": 2 * 6 * 64,
    }
    layout = layout_from_report("rdk-s100", "input", props)
    assert (layout.name, layout.shape) == ("NV12", (2, 6, 10))
    assert layout.offset_of((0, 1, 0)) == 64
    y = layout_from_report("rdk-x5", "input", {**props, "tensorType": "Y", "alignedByteSize": 0})
    assert (y.name, y.shape, y.offset_of((0, 1, 0))) == ("Y", (2, 4, 10), 32)


def test_horizon_unknown_types() -> None:
    with pytest.raises(LayoutError, match="tensorType YUV444 has no codec layout"):
        layout_from_report("rdk-x5", "input", {"validShape": [1, 3, 2, 2], "tensorType": 3})
    with pytest.raises(LayoutError, match="no 'validShape'"):
        layout_from_report("rdk-x5", "input", {"tensorType": "S8"})


# ----------------------------------------------------------------------------- KL730


def test_kl730_descriptor_names_and_device_strides() -> None:
    desc = {
        "data_layout": "KP_MODEL_TENSOR_DATA_LAYOUT_16W1C8B",
        "shape": [1, 2, 3, 5],
        "stride_npu": [2 * 3 * 32, 3 * 32, 32, 1],  # rows padded to 32, not the table's 16
    }
    layout = layout_from_report("kl730", "output", desc)
    # Whole 16-byte entries up to the last row's data: 96 + 2 * 32 + 16.
    assert (layout.name, layout.dtype.name, layout.nbytes) == ("16W1C8B", "int8", 176)
    predicted = predicted_layout("kl730", "output", desc)
    assert predicted.nbytes == 96
    found = disagreements(diff_attributes(predicted, {**desc, "data_layout": "16W1C8B"}))
    assert [f.attribute for f in found] == ["stride_npu"]
    with pytest.raises(LayoutError, match="map names, never numbers"):
        layout_from_report("kl730", "output", {**desc, "data_layout": 3})
    raw16 = layout_from_report("kl730", "output", {**desc, "data_layout": "RAW_16B"})
    assert raw16.dtype == np.int16


def kneron_read(fmt: str, data: np.ndarray, shape: tuple[int, ...], stride: list[int]) -> Any:
    """Kneron's own reading of an outer-group node (1W16C8B, 1W16C8BHL), restated: the offset
    is sum(index * stride_npu) plus (c >> 4) * (G - 16), G the largest stride * size of the axes
    whose stride is not 1; HL splits it into an L and an H entry 16 bytes apart."""
    index = np.indices(shape).reshape(len(shape), -1).T
    channel = [a for a, s in enumerate(stride) if s == 1][-1]
    group = max(s * d for s, d in zip(stride, shape, strict=True) if s != 1)
    offset = index @ np.asarray(stride) + (index[:, channel] >> 4) * (group - 16)
    if fmt == "1W16C8B":
        return data.view(np.int8)[offset].reshape(shape)
    low = (offset >> 4) * 32 + (offset & 15)
    lo, hi = data[low].astype(np.int64), data[low + 16].astype(np.int64)
    return (
        ((((lo & 0x7F) | (hi << 7)) << 1) & 0xFFFF).astype(np.uint16).view(np.int16).reshape(shape)
    )


@pytest.mark.parametrize("fmt", ["1W16C8B", "1W16C8BHL"])
@pytest.mark.parametrize("batch", [1, 2])
def test_kl730_sim_reports_outer_group_strides_in_kneron_convention(fmt: str, batch: int) -> None:
    """More than 16 channels, N up to 2: the simulated KL730 reports stride_npu for one group of
    16 channels, and Kneron's reading of its bytes with those strides gives the tensor."""
    h, w = 3, 7
    model = build("conv1x1", (batch, 20, h, w), out_channels=33)
    given = inputs_for(model, "float32", seed=21)
    run = run_sim("kl730", model, given, layouts={"input": fmt}, output_layout=fmt)
    items = compare("kl730", model, given, run)
    assert len(items) == 2
    for item in items:
        device = item.device
        shape = tuple(device.shape)
        assert device.attributes["stride_npu"] == [h * w * 16, 1, w * 16, 16]
        values = kneron_read(fmt, device.data, shape, device.attributes["stride_npu"])
        assert np.array_equal(values, item.expected.values), device.role
        layout = layout_from_report("kl730", device.role, device.attributes)
        assert np.array_equal(layout.unpack(device.data), values)


def test_reports_must_be_mappings_of_known_targets() -> None:
    with pytest.raises(LayoutError, match="unknown target"):
        layout_from_report("rk9999", "output", {})
    with pytest.raises(LayoutError, match="must be a mapping"):
        layout_from_report("rk3588", "output", [1, 2])  # type: ignore[arg-type]


def test_predicted_layout_is_the_codec_prediction() -> None:
    attr = {"dims": [1, 2, 3, 5, 16], "n_elems": 480, "fmt": "NC1HWC2", "type": "INT8"}
    predicted = predicted_layout("rk3588", "output", attr, shape=(1, 20, 3, 5), last_op="other")
    expected = get_layout("rk3588", "NC1HWC2", (1, 20, 3, 5), "int8", last_op="other")
    assert predicted.nbytes == expected.nbytes and predicted.dims == expected.dims
