"""CasePoint.to_dict (written by hand for speed) says what the dataclass holds, bar run_id."""

from __future__ import annotations

from dataclasses import asdict

from hypothesis import given
from hypothesis import strategies as st

from npu_hil.harness.history.model import CasePoint

FIGURES = st.none() | st.dictionaries(
    st.sampled_from(["p50_ms", "p99_ms", "runs", "snr_db", "cosine", "source"]),
    st.floats(allow_nan=False) | st.integers() | st.sampled_from(["inf", "adapter"]),
)


@given(st.text(), st.text(), st.sampled_from(["passed", "failed", "skipped"]), FIGURES, FIGURES)
def test_to_dict_is_asdict_without_the_run_id(
    nodeid: str, board: str, outcome: str, latency: object, accuracy: object
) -> None:
    point = CasePoint(
        run_id="20261201T020000Z-abcdef",
        nodeid=nodeid,
        board=board,
        target="t",
        outcome=outcome,
        ran_on="sim",
        latency=latency,  # type: ignore[arg-type]
        accuracy=accuracy,  # type: ignore[arg-type]
        noisy="thermal zone 0 moved 6 C",
    )
    expected = asdict(point)
    del expected["run_id"]
    data = point.to_dict()
    assert data == expected
    if point.latency is not None:
        assert data["latency"] is not point.latency  # a copy, like asdict's
