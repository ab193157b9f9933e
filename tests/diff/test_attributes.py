"""Attribute diff: predictions against what the device reported, each naming its table row."""

from __future__ import annotations

from npu_hil.harness.codec import get_layout
from npu_hil.harness.diff.attributes import diff_attributes, disagreements


def test_rknn_w_stride_disagreement_names_the_table_row() -> None:
    layout = get_layout("rk3566", "NHWC", (1, 3, 224, 223), "uint8", role="input")
    findings = diff_attributes(layout, {"w_stride": 232, "size_with_stride": 224 * 232 * 3})
    bad = disagreements(findings)
    assert {f.attribute for f in bad} == {"w_stride", "size_with_stride"}
    w_stride = next(f for f in bad if f.attribute == "w_stride")
    assert w_stride.predicted == 224 and w_stride.reported == 232
    assert "RK3566/RK3568 input row" in w_stride.rule
    assert "width aligned to 8" in w_stride.rule


def test_rknn_native_dims_c2_reading() -> None:
    layout = get_layout("rk3588", "NC1HWC2", (1, 40, 20, 20), "int8")
    ok = diff_attributes(
        layout, {"dims": [1, 4, 20, 20, 16], "size": 4 * 400 * 16, "fmt": "nc1hwc2"}
    )
    assert disagreements(ok) == []
    other = diff_attributes(layout, {"dims": [1, 3, 20, 20, 16]})
    (finding,) = disagreements(other)
    assert "RKNPU User Guide" in finding.rule
    assert "RK3588 output row" in finding.rule


def test_horizon_stride_aligned_byte_size_and_address() -> None:
    layout = get_layout("rdk-s100", "strided", (1, 3, 212, 212), "uint16")
    reported = {
        "stride": [301056, 100352, 448, 2],
        "alignedByteSize": 301056,
        "address": 0x7F000020,
    }
    assert disagreements(diff_attributes(layout, reported)) == []
    reported = {"stride": [1, 2, 3, 2], "aligned_byte_size": 5, "address": 0x7F000010}
    bad = disagreements(diff_attributes(layout, reported))
    assert {f.attribute for f in bad} == {"stride", "aligned_byte_size", "address"}
    address = next(f for f in bad if f.attribute == "address")
    assert "seeds/003" in address.rule
    assert "16 bytes past" in address.message
    stride = next(f for f in bad if f.attribute == "stride")
    assert "worked example" in stride.rule


def test_kl730_stride_npu() -> None:
    layout = get_layout("kl730", "16W1C8B", (1, 2, 3, 20), "int8")
    assert disagreements(diff_attributes(layout, {"stride_npu": [192, 96, 32, 1]})) == []
    (bad,) = disagreements(diff_attributes(layout, {"stride_npu": [120, 60, 20, 1]}))
    assert "rows padded to 16 columns" in bad.rule
    assert "seeds/000 16W1C8B" in bad.rule


def test_a_layout_built_with_device_params_still_compares_predictions() -> None:
    layout = get_layout("rk3588", "NHWC", (1, 3, 4, 13), "uint8", role="input", w_stride=32)
    (finding,) = diff_attributes(layout, {"w_stride": 32})
    assert finding.predicted == 16
    assert not finding.agrees


def test_runtime_enum_spellings_are_the_same_attribute() -> None:
    rknn = get_layout("rk3588", "UNDEFINE", (1, 20), "int8")
    assert disagreements(diff_attributes(rknn, {"fmt": "UNDEFINED"})) == []
    assert disagreements(diff_attributes(rknn, {"fmt": "RKNN_TENSOR_UNDEFINED"})) == []
    kl730 = get_layout("kl730", "1W16C8B", (1, 20, 2, 2), "int8")
    reported = {"data_layout": "KP_MODEL_TENSOR_DATA_LAYOUT_1W16C8B"}
    assert disagreements(diff_attributes(kl730, reported)) == []
    assert disagreements(diff_attributes(kl730, {"data_layout": "1W16C8B_CH_COMPACT"}))
