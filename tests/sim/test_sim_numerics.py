"""How a simulated board computes a model (option ``numerics``): the NPU's numerics through the
graph by default, the float graph on request, the vendor's own simulator where installed."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from npu_hil.harness.models import build
from npu_hil.harness.sim import SimConfigError, SimInput, SimNpu, SimRefusal

X = np.random.default_rng(3).uniform(0, 255, (1, 3, 6, 10)).astype(np.float32)


def _output(target: str, numerics: str, **options: str) -> np.ndarray:
    npu = SimNpu(target, numerics=numerics, **options)
    model = npu.load(build("conv3x3", (1, 3, 6, 10), out_channels=8))
    (output,) = npu.run(model, [SimInput.logical("input", X)]).outputs
    return np.asarray(output.codec_layout.unpack(output.data))


def test_an_int8_board_computes_through_the_graph_unlike_the_float_graph() -> None:
    through, edges = _output("rk3588", "auto"), _output("rk3588", "float")
    assert through.shape == edges.shape and not np.array_equal(through, edges)
    # The same inputs give the same model and the same bytes (the oracle relies on it).
    assert np.array_equal(through, _output("rk3588", "auto"))


def test_a_float16_board_rounds_every_activation() -> None:
    through = _output("rk3588", "auto", precision="float16")
    edges = _output("rk3588", "float", precision="float16")
    assert through.dtype == np.float16 and not np.array_equal(through, edges)
    assert np.allclose(through, edges, rtol=1e-2, atol=0.5)


def test_an_unknown_numerics_is_refused_naming_the_choices() -> None:
    with pytest.raises(SimConfigError, match=r"numerics must be one of auto, float, vendor"):
        SimNpu("rk3588", numerics="fixed")


def test_a_calibration_sample_must_give_the_models_inputs() -> None:
    npu = SimNpu("rk3588")
    model = npu.load(build("conv3x3", (1, 3, 6, 10)))
    with pytest.raises(SimConfigError, match=r"gives other; the model's inputs are input"):
        npu.calibrate(model, [{"other": X}])


@pytest.mark.skipif(
    importlib.util.find_spec("rknn") is not None, reason="the vendor's simulator is installed"
)
def test_the_vendors_simulator_without_its_toolkit_is_a_clear_refusal() -> None:
    with pytest.raises(SimRefusal, match=r"the vendor's simulator cannot run here: rknn-toolkit2"):
        _output("rk3588", "vendor")
    with pytest.raises(SimRefusal, match=r"rdk-x3: its vendor has no simulator to run"):
        _output("rdk-x3", "vendor")
