"""``run.output(name)`` / ``run.input(name)``: a run's tensors decoded, and with
``dequantize=True`` in float by the quantization the runtime reported; ``run.outputs`` stays the
raw evidence."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from npu_hil.harness.errors import DeviceError
from npu_hil.harness.farm import Farm
from npu_hil.harness.farm.decode import dequantize
from npu_hil.harness.pipeline import run_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sim_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    with Farm(ROOT / "inventory.yaml", workdir=tmp_path_factory.mktemp("farm")) as farm:
        yield farm


def _board(farm: Farm, target: str) -> str:
    return next(b.name for b in farm.inventory.boards if b.target == target)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["rk3588", "rk3566", "kl730", "rdk-x5", "rdk-s100"])
def test_output_decoded_and_dequantized_on_each_vendor(sim_farm: Farm, target: str) -> None:
    x = np.linspace(-1.0, 1.0, 3 * 4 * 6, dtype=np.float32).reshape(1, 3, 4, 6)
    run = run_model(sim_farm.session(_board(sim_farm, target)), "identity", {"input": x})
    assert run.ok, run.summary()
    raw = run.outputs[0]
    stored = run.output("output")
    # the stored values: what the layout unpacks from the raw device buffer, not the buffer
    assert stored.shape == x.shape and stored.dtype == raw.layout.dtype
    np.testing.assert_array_equal(stored, raw.layout.unpack(raw.data))
    assert raw.data.dtype == np.uint8 and raw.data.ndim == 1  # the evidence stays raw
    values = run.output("output", dequantize=True)
    assert values.dtype == np.float32 and values.shape == x.shape
    # identity through a quantized output: within one quantization step of the input
    step = 2.0 / 127
    assert np.max(np.abs(values - x)) <= step, np.max(np.abs(values - x))
    assert not np.array_equal(stored.astype(np.float32), values)


def test_input_reads_back_what_the_device_held(sim_farm: Farm) -> None:
    x = np.arange(3 * 4 * 5, dtype=np.uint8).reshape(1, 3, 4, 5)
    run = run_model(sim_farm.session(_board(sim_farm, "rk3588")), "identity", {"input": x})
    np.testing.assert_array_equal(run.input("input"), x)
    with pytest.raises(KeyError, match="no output tensor 'input'"):
        run.output("input")


def test_reported_schemes_by_hand() -> None:
    q = np.array([[-128, 0, 127]], dtype=np.int8)
    rknn = {"qnt_type": "AFFINE_ASYMMETRIC", "zp": -128, "scale": 0.5}
    np.testing.assert_allclose(dequantize(q, rknn, "t"), [[0.0, 64.0, 127.5]])
    np.testing.assert_allclose(dequantize(q, {"qnt_type": 1, "fl": 2}, "t"), [[-32, 0, 31.75]])
    per_channel = np.array([[[1]], [[1]]], dtype=np.int8).reshape(1, 2, 1, 1)
    horizon = {"quantiType": "SCALE", "scale": [0.5, 0.25], "zeroPoint": [0, 0], "quantizeAxis": 1}
    np.testing.assert_allclose(dequantize(per_channel, horizon, "t").ravel(), [0.5, 0.25])
    shift = {"quantiType": "SHIFT", "shift": [1, 2], "quantizeAxis": 1}
    np.testing.assert_allclose(dequantize(per_channel, shift, "t").ravel(), [0.5, 0.25])
    kneron = {"radix": [6], "scale": [2.0], "quantized_axis": 1}
    np.testing.assert_allclose(dequantize(q, kneron, "t"), [[-1.0, 0.0, 127 / 128]])
    floats = np.array([1.5], dtype=np.float16)
    assert dequantize(floats, rknn, "t").dtype == np.float32  # float data is not re-scaled
    with pytest.raises(DeviceError, match="no quantization parameters"):
        dequantize(q, {"name": "x"}, "rk3588-01 output 'x'")


@pytest.mark.slow
@given(
    st.integers(-128, 127),
    st.integers(-128, 127),
    st.floats(1e-4, 10.0, allow_nan=False),
)
def test_affine_dequantize_inverts_quantize(q: int, zp: int, scale: float) -> None:
    stored = np.array([q], dtype=np.int8)
    x = dequantize(stored, {"qnt_type": "AFFINE_ASYMMETRIC", "zp": zp, "scale": scale}, "t")
    back = np.clip(np.rint(x.astype(np.float64) / scale) + zp, -128, 127)
    assert int(back[0]) == q
