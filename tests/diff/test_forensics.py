"""Forensics recovers the true layout and parameters, and says so when nothing fits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_hil.harness.codec import get_layout
from npu_hil.harness.diff import explain
from npu_hil.targets.kneron import kl730

OUTPUT_FORMATS = [f.name for f in kl730.FORMATS.values() if not f.input_only]
INPUT_FORMATS = [f.name for f in kl730.FORMATS.values()]


@st.composite
def kl730_cases(draw: st.DrawFn) -> tuple[str, str, tuple[int, ...], np.ndarray]:
    role = draw(st.sampled_from(["input", "output"]))
    name = draw(st.sampled_from(INPUT_FORMATS if role == "input" else OUTPUT_FORMATS))
    fmt = kl730.FORMATS[name]
    most = fmt.max_channels or 40
    channels = draw(st.sampled_from(fmt.channels)) if fmt.channels else draw(st.integers(1, most))
    shape = (1, channels, draw(st.integers(1, 5)), draw(st.integers(1, 23)))
    dtype = np.int16 if fmt.bits == 16 else np.int8
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    tensor = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    if fmt.quirk_15bit:
        tensor &= ~np.array(1, dtype)
    return role, name, shape, tensor


@pytest.mark.slow
@settings(max_examples=60)
@given(kl730_cases())
def test_forensics_recovers_every_kl730_format(
    case: tuple[str, str, tuple[int, ...], np.ndarray],
) -> None:
    role, name, shape, tensor = case
    layout = get_layout("kl730", name, shape, tensor.dtype, role=role)
    if name == "HW4C8B_DROP_A":
        tensor = tensor.copy()
        tensor[:, 3:] = 0  # the format drops alpha; only such tensors round trip
    device = layout.pack(tensor)
    explanation = explain(device, tensor, "kl730", role=role, limit=100)
    assert explanation.found
    exact = [c for c in explanation.candidates if c.exact and not c.swapped]
    assert any(c.layout == name and c.params == {} for c in exact), (
        name,
        [c.describe() for c in exact],
    )
    # Everything ranked above the truth reproduces the buffer too (an equivalent layout).
    assert explanation.best is not None and explanation.best.exact


@pytest.mark.slow
@settings(max_examples=25)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["kl730", "rk3588", "rdk-x5"]))
def test_random_bytes_match_no_known_layout(seed: int, target: str) -> None:
    rng = np.random.default_rng(seed)
    tensor = rng.integers(-128, 127, (1, 20, 3, 7), endpoint=True).astype(np.int8)
    name = {"kl730": "1W16C8B", "rk3588": "NC1HWC2", "rdk-x5": "strided"}[target]
    layout = get_layout(target, name, tensor.shape, tensor.dtype)
    device = rng.integers(0, 255, layout.nbytes, endpoint=True).astype(np.uint8)
    explanation = explain(device, tensor, target)
    assert not explanation.found
    assert explanation.verdict() == f"no known {target} layout reproduces the device buffer"


def test_rknn_c2_and_last_op_are_recovered() -> None:
    rng = np.random.default_rng(5)
    tensor = rng.integers(-128, 127, (1, 20, 3, 5), endpoint=True).astype(np.int8)
    truth = get_layout("rk3566", "NC1HWC2", tensor.shape, "int8", c2=16, last_op="other")
    declared = get_layout("rk3566", "NC1HWC2", tensor.shape, "int8")
    explanation = explain(truth.pack(tensor), tensor, "rk3566", role="output", declared=declared)
    assert explanation.found
    assert explanation.best is not None
    assert explanation.best.params.get("c2") == 16
    assert "the model declares NC1HWC2" in explanation.verdict()


def test_horizon_alignment_is_recovered() -> None:
    rng = np.random.default_rng(6)
    tensor = rng.integers(0, 255, (1, 3, 5, 7), endpoint=True).astype(np.uint8)
    aligned = get_layout("rdk-x3", "strided", tensor.shape, "uint8", aligned_shape=[1, 3, 8, 16])
    explanation = explain(aligned.pack(tensor), tensor, "rdk-x3")
    assert explanation.found
    assert explanation.best is not None
    # H = 5 padded to 8 is what aligning H to 4 or to 8 both give: the strides are the fact.
    assert explanation.best.params == {"stride": [384, 128, 16, 1]}
    assert "W to 16" in explanation.best.describe()


def test_explanation_json() -> None:
    tensor = np.zeros((1, 16, 1, 1), np.int8)
    data = explain(np.zeros(16, np.uint8), tensor, "kl730", role="output").to_dict()
    assert data["found"] is True
    assert data["candidates"][0]["exact"] is True


def test_a_truncated_buffer_is_blamed_on_the_cut_not_on_another_layout() -> None:
    layout = get_layout("rk3588", "NC1HWC2", (1, 3, 5, 7), "int8")
    x = np.random.default_rng(1).integers(-100, 100, (1, 3, 5, 7)).astype(np.int8)
    packed = layout.pack(x)
    cut = packed[: len(packed) * 3 // 4]
    found = explain(cut, x, "rk3588", role="output", declared=layout)
    assert found.verdict() == (
        f"the device buffer is the declared NC1HWC2 cut short: {cut.size} of its "
        f"{packed.size} bytes"
    )
    # Without the declared layout nothing is claimed either.
    assert "no known" in explain(cut, x, "rk3588", role="output").verdict()


def test_swapped_channel_groups_are_named() -> None:
    layout = get_layout("rk3566", "NC1HWC2", (1, 20, 4, 4), "int8", last_op="conv")
    x = np.random.default_rng(1).integers(-100, 100, (1, 20, 4, 4)).astype(np.int8)
    packed = layout.pack(x)
    plane = 16 * 8
    swapped = packed.copy()
    swapped[:plane], swapped[plane : 2 * plane] = packed[plane : 2 * plane], packed[:plane]
    found = explain(swapped, x, "rk3566", role="output", declared=layout)
    assert found.verdict().endswith("with channel groups 0 and 1 swapped")
    assert found.to_dict()["declared_fault"] == "with channel groups 0 and 1 swapped"
    assert "cut short" not in explain(packed, x, "rk3566", declared=layout).verdict()
