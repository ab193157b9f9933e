"""Accuracy that means what it says: a simulated board computes a zoo model the way the NPU does
(int8 or float16 through the whole graph), so its signal-to-noise ratio against the float model
is the one rknn-toolkit2's own simulator gave on the same inputs, within 3 dB (the toolkit's
figures: tests/data/zoo/rknn_zoo.json.gz, ``simulator_snr_db``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import zoo_agreement as agreement
from zoo_inputs import SAMPLES, TEST_SAMPLES, samples
from zoo_models import BUILDERS

from npu_hil.harness.diff.accuracy import measure
from npu_hil.harness.models.reference import reference_outputs
from npu_hil.harness.sim import SimInput, SimNpu, SimTensor

pytestmark = pytest.mark.real_models
TOLERANCE_DB = 3.0
KNOWN_GAPS = {
    ("classifier_topk", "float16"): (
        "TopK's values in float16: the toolkit's simulator gives 64.5 dB where rounding every "
        "activation to float16 gives 71.9 (its ~7 dB extra loss in front of TopK is not "
        "modeled); the int8 build agrees within 0.2 dB",
        6.0,
    ),
}
"""(model, precision) -> why the simulated board differs from the toolkit by more than 3 dB,
and the least gap that keeps it listed (so a fix shows up as a failure to remove it)."""
BOARD = {"int8": "rk3588", "float16": "rk3588"}


def _values(tensor: SimTensor) -> np.ndarray:
    """What the device's output buffer means: unpacked, dequantized."""
    stored = tensor.codec_layout.unpack(tensor.data).astype(np.float64)
    attrs = tensor.attributes
    if attrs.get("qnt_type") == "AFFINE_ASYMMETRIC":
        stored = (stored - attrs["zp"]) * attrs["scale"]
    return stored


def simulated_snr(model: str, precision: str, numerics: str = "auto") -> list[float | None]:
    proto = BUILDERS[model]()
    npu = SimNpu(BOARD[precision], precision=precision, numerics=numerics)
    loaded = npu.load(proto)
    shapes = {t.name: tuple(int(d or 1) for d in t.shape) for t in loaded.graph.inputs}
    npu.calibrate(loaded, samples(shapes, SAMPLES, seed=1))
    tests = samples(shapes, TEST_SAMPLES, seed=2)
    got: dict[str, list[np.ndarray]] = {}
    want: dict[str, list[np.ndarray]] = {}
    for sample in tests:
        run = npu.run(loaded, [SimInput.logical(k, v) for k, v in sample.items()])
        for tensor in run.outputs:
            got.setdefault(tensor.name, []).append(_values(tensor).ravel())
        for name, value in reference_outputs(proto, sample).items():
            want.setdefault(name, []).append(np.asarray(value).ravel())
    figures: list[float | None] = []
    for output in proto.graph.output:
        reference = np.concatenate(want[output.name])
        if not np.issubdtype(reference.dtype, np.floating):
            figures.append(None)
            continue
        device = np.concatenate(got[output.name])
        figures.append(round(measure(device, reference.astype(np.float64)).snr_db, 2))
    return figures


def _toolkit_rows() -> list[dict[str, Any]]:
    """One record per (model, precision) on the board the comparison runs."""
    return [r for r in agreement.records() if r["built"] and r["target"] == BOARD[r["precision"]]]


@pytest.mark.parametrize("record", _toolkit_rows(), ids=lambda r: f"{r['model']}-{r['precision']}")
def test_the_simulated_snr_is_the_vendor_simulators_within_3_db(record: dict[str, Any]) -> None:
    ours = simulated_snr(record["model"], record["precision"])
    theirs = record["simulator_snr_db"]
    print(f"\n{record['model']} {record['precision']}: simulated board {ours}, toolkit {theirs}")
    gap = KNOWN_GAPS.get((record["model"], record["precision"]))
    for mine, vendor in zip(ours, theirs, strict=True):
        if vendor is None:
            assert mine is None
            continue
        assert mine is not None
        if gap is not None:
            assert abs(mine - vendor) >= gap[1], f"no longer a gap, drop it: {gap[0]}"
            continue
        assert abs(mine - vendor) <= TOLERANCE_DB, (ours, theirs)


def test_quantizing_only_the_edges_was_too_optimistic() -> None:
    """The float graph with int8 inputs and outputs (numerics: float) claims far more than the
    toolkit's int8 simulator measures: the gap this numerics closes."""
    record = next(
        r for r in _toolkit_rows() if (r["model"], r["precision"]) == ("vit_block", "int8")
    )
    (edges,) = simulated_snr("vit_block", "int8", numerics="float")
    (vendor,) = record["simulator_snr_db"]
    assert edges is not None and edges - vendor > TOLERANCE_DB
