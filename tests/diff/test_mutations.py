"""Inject each fault class into a correct device buffer: the report must name it and say where."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from npu_hil.harness.codec import BlockedLayout, get_layout
from npu_hil.harness.diff import DiffReport, diff_buffers


def tensor_for(layout: BlockedLayout, seed: int = 0) -> np.ndarray:
    """Distinct-looking values that avoid the extremes (so +1 never wraps)."""
    rng = np.random.default_rng(seed)
    if layout.dtype.kind == "f":
        return rng.uniform(-4, 4, layout.shape).astype(layout.dtype)
    info = np.iinfo(layout.dtype)
    low, high = int(info.min) + 8, int(info.max) - 8
    values = rng.integers(low, high, layout.shape, endpoint=True).astype(layout.dtype)
    if layout.encoding.value_bits == 15:
        values &= ~np.array(1, dtype=layout.dtype)
    return values


def kinds(report: DiffReport) -> set[str]:
    return {finding.kind for finding in report.findings}


CASES = [
    ("kl730", "1W16C8B", (1, 40, 3, 5), "int8", {}),
    ("kl730", "16W1C8B", (1, 3, 4, 21), "uint8", {}),
    ("kl730", "1W16C8BHL", (1, 20, 3, 5), "int16", {}),
    ("kl730", "8W1C16B", (1, 2, 3, 13), "int16", {}),
    ("rk3588", "NC1HWC2", (1, 40, 3, 5), "int8", {}),
    ("rk3566", "NHWC", (1, 3, 4, 13), "uint8", {"role": "input"}),
    ("rdk-s100", "strided", (1, 3, 5, 7), "uint16", {}),
]


@pytest.fixture(params=CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def case(request: pytest.FixtureRequest) -> tuple[BlockedLayout, np.ndarray, np.ndarray]:
    target, name, shape, dtype, extra = request.param
    layout = get_layout(target, name, shape, dtype, **extra)
    tensor = tensor_for(layout)
    return layout, tensor, layout.pack(tensor)


def element(layout: BlockedLayout) -> tuple[int, ...]:
    """An element in the middle of the tensor."""
    return tuple(d // 2 for d in layout.shape)


def test_a_correct_buffer_is_equal(case: tuple[BlockedLayout, np.ndarray, np.ndarray]) -> None:
    layout, tensor, packed = case
    report = diff_buffers(layout, tensor, packed)
    assert report.verdict == "equal"
    assert report.ok
    assert report.findings == []
    assert report.elements_compared == tensor.size


def test_bit_flip_is_named_and_located(case: tuple[BlockedLayout, np.ndarray, np.ndarray]) -> None:
    layout, tensor, packed = case
    index = element(layout)
    offset = layout.offset_of(index, layout.encoding.nparts - 1)
    device = packed.copy()
    device[offset] ^= 0x10
    report = diff_buffers(layout, tensor, device)
    assert report.mismatched == 1
    assert report.first_mismatches[0].index == index
    assert report.first_mismatches[0].offset == offset
    assert "bit-flip" in kinds(report)


def test_off_by_one_value_is_named_and_located(
    case: tuple[BlockedLayout, np.ndarray, np.ndarray],
) -> None:
    layout, tensor, _ = case
    if layout.dtype.kind == "f":
        pytest.skip("off by one quantized unit is an integer notion")
    index = element(layout)
    step = 2 if layout.encoding.value_bits == 15 else 1
    wrong = tensor.copy()
    wrong[index] += step
    report = diff_buffers(layout, tensor, layout.pack(wrong))
    assert report.mismatched == 1
    assert report.first_mismatches[0].index == index
    assert report.first_mismatches[0].got - report.first_mismatches[0].expected == step
    if step == 1:
        assert "off-by-one" in kinds(report)


def test_dirty_padding_is_its_own_finding(
    case: tuple[BlockedLayout, np.ndarray, np.ndarray],
) -> None:
    layout, tensor, packed = case
    padding = np.flatnonzero(layout.padding_mask())
    if not padding.size:
        pytest.skip("this layout has no padding at these sizes")
    device = packed.copy()
    dirty = padding[:: max(1, padding.size // 5)][:5]
    device[dirty] = 0xA5
    report = diff_buffers(layout, tensor, device)
    assert report.mismatched == 0
    assert report.dirty_padding_bytes == dirty.size
    assert report.first_dirty_padding == [int(o) for o in dirty]
    assert "dirty-padding" in kinds(report)
    assert not report.ok
    assert diff_buffers(layout, tensor, device, padding="ignore").ok


def test_truncated_buffer_compares_the_prefix(
    case: tuple[BlockedLayout, np.ndarray, np.ndarray],
) -> None:
    layout, tensor, packed = case
    cut = packed.size - 17
    report = diff_buffers(layout, tensor, packed[:cut])
    assert report.length_delta == -17
    assert "truncated" in kinds(report)
    assert report.mismatched == 0
    lost = sum(
        1
        for index in np.ndindex(*layout.shape)
        if any(layout.offset_of(index, s) >= cut for s in range(layout.encoding.nparts))
    )
    assert report.elements_missing == lost
    assert report.elements_compared == tensor.size - lost
    assert "17 bytes short" in report.summary()
    # A fault in the prefix is still found (bit 6: kept by every encoding).
    device = packed[:cut].copy()
    device[0] ^= 0x40
    assert diff_buffers(layout, tensor, device).mismatched == 1


def test_over_long_buffer(case: tuple[BlockedLayout, np.ndarray, np.ndarray]) -> None:
    layout, tensor, packed = case
    report = diff_buffers(layout, tensor, np.concatenate([packed, np.zeros(9, np.uint8)]))
    assert report.length_delta == 9
    assert "over-long" in kinds(report)
    assert report.mismatched == 0
    assert "9 bytes long" in report.summary()


def test_swapped_channel_groups_are_named() -> None:
    layout = get_layout("kl730", "1W16C8B", (1, 48, 3, 5), "int8")
    tensor = tensor_for(layout)
    swapped = tensor.copy()
    swapped[:, 0:16], swapped[:, 32:48] = tensor[:, 32:48], tensor[:, 0:16]
    report = diff_buffers(layout, tensor, layout.pack(swapped))
    assert "channel-groups-swapped" in kinds(report)
    text = next(f.message for f in report.findings if f.kind == "channel-groups-swapped")
    assert "channel groups 0 and 2" in text
    assert set(report.per_group) == {0, 2}
    assert report.first_mismatches[0].index == (0, 0, 0, 0)


def test_swapped_nc1hwc2_blocks_are_named() -> None:
    layout = get_layout("rk3588", "NC1HWC2", (1, 32, 3, 5), "int8")
    tensor = tensor_for(layout)
    swapped = tensor.copy()
    swapped[:, 0:16], swapped[:, 16:32] = tensor[:, 16:32], tensor[:, 0:16]
    report = diff_buffers(layout, tensor, layout.pack(swapped))
    assert "channel-groups-swapped" in kinds(report)


def test_wrong_row_alignment_is_named_by_forensics() -> None:
    layout = get_layout("kl730", "16W1C8B", (1, 2, 3, 40), "int8")  # rows of 48 bytes
    tensor = tensor_for(layout)
    rows_of_32 = get_layout(
        "kl730", "16W1C8B", (1, 2, 3, 40), "int8", stride_npu=[2 * 3 * 64, 3 * 64, 64, 1]
    )
    report = diff_buffers(layout, tensor, rows_of_32.pack(tensor))
    assert "layout" in kinds(report)
    text = next(f.message for f in report.findings if f.kind == "layout")
    assert "rows padded to 32 columns" in text
    assert "the model declares 16W1C8B" in text


def test_wrong_w_stride_is_named_by_forensics() -> None:
    layout = get_layout("rk3588", "NHWC", (1, 3, 4, 13), "uint8", role="input")
    tensor = tensor_for(layout)
    device = get_layout("rk3588", "NHWC", (1, 3, 4, 13), "uint8", role="input", w_stride=32)
    report = diff_buffers(layout, tensor, device.pack(tensor))
    text = next(f.message for f in report.findings if f.kind == "layout")
    assert "w_stride=32" in text


def test_outer_vs_inner_channel_groups_is_named() -> None:
    layout = get_layout("kl730", "1W16C8B", (1, 32, 4, 5), "int8")
    tensor = tensor_for(layout)
    compact = get_layout("kl730", "1W16C8B_CH_COMPACT", (1, 32, 4, 5), "int8")
    report = diff_buffers(layout, tensor, compact.pack(tensor))
    text = next(f.message for f in report.findings if f.kind == "layout")
    assert text.startswith("the device buffer is 1W16C8B_CH_COMPACT")
    assert "the model declares 1W16C8B" in text


@pytest.mark.parametrize(
    ("target", "name", "shape", "dtype", "kind"),
    [
        ("kl730", "1W16C8BHL", (1, 20, 3, 5), "int16", "hl-swap"),
        ("kl730", "16W1C8BHL", (1, 2, 3, 5), "int16", "hl-swap"),
        ("kl730", "RAW_16B", (1, 2, 3, 5), "int16", "byte-swap"),
        ("rk3588", "NC1HWC2", (1, 20, 3, 5), "float16", "byte-swap"),
        ("rdk-x5", "strided", (1, 3, 5, 7), "int16", "byte-swap"),
    ],
)
def test_swapped_bytes_of_16_bit_values_are_named(
    target: str, name: str, shape: tuple[int, ...], dtype: str, kind: str
) -> None:
    layout = get_layout(target, name, shape, dtype)
    tensor = tensor_for(layout)
    swapped = dataclasses.replace(
        layout, encoding=dataclasses.replace(layout.encoding, swapped=True)
    )
    report = diff_buffers(layout, tensor, swapped.pack(tensor))
    assert kind in kinds(report), report.summary()


def test_bytes_swapped_in_pairs_of_an_8_bit_buffer() -> None:
    layout = get_layout("kl730", "1W16C8B", (1, 16, 2, 3), "int8")
    tensor = tensor_for(layout)
    packed = layout.pack(tensor)
    device = packed.reshape(-1, 2)[:, ::-1].reshape(-1).copy()
    report = diff_buffers(layout, tensor, device)
    assert "byte-swap" in kinds(report)


def test_expected_may_be_packed_bytes_and_padding_exact() -> None:
    layout = get_layout("kl730", "16W1C8B", (1, 1, 2, 5), "int8")
    tensor = tensor_for(layout)
    expected = layout.pack(tensor)
    expected[layout.padding_mask()] = 3
    device = expected.copy()
    assert diff_buffers(layout, expected.tobytes(), device, padding="exact").ok
    zero = diff_buffers(layout, expected.tobytes(), device, padding="zero")
    assert zero.dirty_padding_bytes == int(layout.padding_mask().sum())
    device[layout.padding_mask()] = 0
    exact = diff_buffers(layout, expected.tobytes(), device, padding="exact")
    assert exact.dirty_padding_bytes == int(layout.padding_mask().sum())


def test_report_json_and_summary_carry_the_facts() -> None:
    layout = get_layout("kl730", "1W16C8B", (1, 20, 3, 5), "int8")
    tensor = tensor_for(layout)
    device = layout.pack(tensor)
    device[layout.offset_of((0, 17, 2, 4))] ^= 1
    report = diff_buffers(layout, tensor, device)
    data = report.to_dict()
    assert data["verdict"] == "different"
    assert list(data["first_mismatches"][0]["index"]) == [0, 17, 2, 4]
    assert data["first_mismatches"][0]["entry"] is not None
    assert data["per_channel"] == {"17": 1}
    assert data["per_group"] == {"1": 1}
    assert "c=17, h=2, w=4" in report.summary()
