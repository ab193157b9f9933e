"""Accuracy that means what it says: a simulated board computes a zoo model the way the NPU does
(int8 or float16 through the whole graph), so its signal-to-noise ratio against the float model
is the one rknn-toolkit2's own simulator gave on the same inputs, within 3 dB (the toolkit's
figures: tests/data/zoo/rknn_zoo.json.gz, ``simulator_snr_db``)."""

from __future__ import annotations

from typing import Any

import pytest
import zoo_agreement as agreement
from zoo_agreement import BOARD, simulated_snr

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
