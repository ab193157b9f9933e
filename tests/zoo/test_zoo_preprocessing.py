"""Inputs as models take them: one test declares a zoo classifier's preprocessing once (uint8
pixels, ImageNet's mean and std) and runs unchanged on a simulated board of every target; each
vendor's path takes the pixels its own way (Rockchip and Horizon: the normalization compiled in,
uint8 pixels in, float16 ones on RK2118 as rknn-toolkit2 2.5.0 builds it; KL730: its hardware
normalizer's template RGB/256 - 0.5 and the rest folded into the model). Data that does not match
the declaration is refused before anything is sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zoo_inputs import MEAN, STD
from zoo_models import BUILDERS

from npu_hil.harness.farm import Farm
from npu_hil.harness.farm.session import BoardSession
from npu_hil.harness.farm.starter import builtin_inventory
from npu_hil.harness.models.reference import reference_outputs
from npu_hil.harness.pipeline import Preprocessing, PreprocessingError, run_model
from npu_hil.harness.pipeline.model import preprocessed
from npu_hil.targets.registry import all_targets, unit_for

pytestmark = pytest.mark.real_models

MODEL = "classifier_softmax"
IMAGENET = Preprocessing.pixels(tuple(MEAN * 255), tuple(STD * 255))
BOARD_DTYPE = {"rockchip": "uint8", "horizon": "uint8", "kneron": "float32"}
"""What each vendor's board is given for uint8 pixels (RK2118: float16, measured)."""


def _pixels(seed: int = 3) -> dict[str, np.ndarray]:
    proto = BUILDERS[MODEL]()
    (graph_input,) = proto.graph.input
    shape = tuple(d.dim_value for d in graph_input.type.tensor_type.shape.dim)
    rng = np.random.default_rng(seed)
    return {graph_input.name: rng.integers(0, 256, shape).astype(np.uint8)}


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    with Farm(builtin_inventory(), workdir=tmp_path_factory.mktemp("farm")) as built:
        yield built


def _session(farm: Farm, target: str) -> BoardSession:
    (board, *_) = [b for b in farm.boards() if b.target == target]
    return farm.session(board)


@pytest.mark.slow
@pytest.mark.parametrize("target", all_targets())
def test_declared_pixels_run_on_every_target(farm: Farm, target: str) -> None:
    """The same call on every SoC: every buffer checked, the classifier as accurate as the
    NPU's numerics allow, and the report says how the vendor took the pixels."""
    inputs = _pixels()
    run = run_model(_session(farm, target), BUILDERS[MODEL](), inputs, preprocessing=IMAGENET)
    assert run.ok, [t.summary() for t in run.tensors]
    (output,) = run.outputs
    assert output.accuracy is not None and output.accuracy.snr_db > 30, output.accuracy
    (note,) = run.preprocessing
    vendor = unit_for(target)
    assert vendor.pixel_input is not None and vendor.pixel_input.how in note


def test_the_boards_model_is_the_original_on_normalized_pixels(farm: Farm) -> None:
    """What every board runs is the original model on ``(pixel - mean) / std``: its float
    reference on the board's inputs equals the original's on the normalized pixels."""
    inputs = _pixels(seed=5)
    original = BUILDERS[MODEL]()
    (name,) = inputs
    (want,) = reference_outputs(original, {name: IMAGENET.normalize(inputs[name])}).values()
    for target in ("rk3588", "rv1106", "rk2118", "rdk-x5", "kl730"):
        reference, _, _, board_inputs, _ = preprocessed(
            _session(farm, target), original, inputs, IMAGENET
        )
        (got,) = reference_outputs(onnx.load(str(reference)), board_inputs).values()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=target)
        wanted = "float16" if target == "rk2118" else BOARD_DTYPE[unit_for(target).name]
        assert board_inputs[name].dtype == np.dtype(wanted), target


@settings(max_examples=25, deadline=None)
@given(
    mean=st.lists(st.floats(0, 255), min_size=3, max_size=3),
    std=st.lists(st.floats(1, 128), min_size=3, max_size=3),
    seed=st.integers(0, 2**16),
)
def test_kneron_template_and_folded_rest_equal_the_declared_normalization(
    mean: list[float], std: list[float], seed: int
) -> None:
    """KL730: the hardware template (RGB/256 - 0.5) then the folded per-channel scale and shift
    give the declared normalization for any mean and std (a model of one Identity, so the
    prepared graph's output is the normalized tensor itself)."""
    from onnx import TensorProto, helper

    from npu_hil.harness.models.preprocessing import prepare

    declared = Preprocessing.pixels(mean, std)
    value = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 5])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 5])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "id", [value], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    pixels = np.random.default_rng(seed).integers(0, 256, (1, 3, 4, 5)).astype(np.uint8)
    for target in ("kl730", "rk3588", "rk2118"):
        prepared = prepare(target, declared, model, {"x": pixels})
        (got,) = reference_outputs(prepared.model, prepared.inputs).values()
        np.testing.assert_allclose(got, declared.normalize(pixels), rtol=1e-5, atol=1e-4)


def test_uint8_data_for_a_model_declared_normalized_is_refused(farm: Farm) -> None:
    with pytest.raises(PreprocessingError) as caught:
        run_model(
            _session(farm, "rk3588"),
            BUILDERS[MODEL](),
            _pixels(),
            preprocessing=Preprocessing.normalized(),
        )
    message = str(caught.value)
    assert "input 'input'" in message and "normalized float input" in message
    assert "got uint8 data (values 0..255)" in message and "Preprocessing.pixels" in message


@pytest.mark.parametrize(
    ("declared", "inputs", "expected"),
    [
        (
            IMAGENET,
            {"input": np.zeros((1, 3, 48, 48), np.float32)},
            "declared pixels take uint8 (N, C, H, W), got float32 [1, 3, 48, 48]",
        ),
        (
            Preprocessing.pixels((1.0, 2.0), (1.0, 1.0)),
            {"input": np.zeros((1, 3, 48, 48), np.uint8)},
            "2 mean/std values declared for 3 channels",
        ),
        (
            {"image": IMAGENET},
            {"input": np.zeros((1, 3, 48, 48), np.uint8)},
            "declared for ['image'], the inputs given are ['input'] (no declaration for ['input'])",
        ),
    ],
    ids=["float-for-pixels", "channels", "names"],
)
def test_data_that_does_not_match_the_declaration_is_refused(
    farm: Farm, declared: object, inputs: dict[str, np.ndarray], expected: str
) -> None:
    session = _session(farm, "kl730")
    with pytest.raises(PreprocessingError) as caught:
        run_model(session, BUILDERS[MODEL](), inputs, preprocessing=declared)  # type: ignore[arg-type]
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("mean", "std", "expected"),
    [
        ((1.0, 2.0, 3.0), (1.0, 1.0), "as many std values as mean values"),
        ((0.0,), (0.0,), "std must be finite and above 0"),
        ((float("nan"),), (1.0,), "std must be finite and above 0 and mean finite"),
    ],
)
def test_a_declaration_that_makes_no_sense_is_refused(
    mean: tuple[float, ...], std: tuple[float, ...], expected: str
) -> None:
    with pytest.raises(PreprocessingError) as caught:
        Preprocessing.pixels(mean, std)
    assert expected in str(caught.value)


def test_pixels_for_a_model_that_already_takes_integers_are_refused(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    from npu_hil.harness.models.preprocessing import prepare

    value = helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3, 4, 4])
    out = helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 3, 4, 4])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "id", [value], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(PreprocessingError) as caught:
        prepare("rv1106", IMAGENET, model, {"x": np.zeros((1, 3, 4, 4), np.uint8)})
    assert "the model's input is UINT8, not float" in str(caught.value)
