"""CasePoint.to_dict (written by hand for speed) says what the dataclass holds, bar run_id."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npu_hil.harness.history.model import INDEX_FILE, CasePoint, RunEntry
from npu_hil.harness.history.store import read_index, update_index

FIGURES = st.none() | st.dictionaries(
    st.sampled_from(["p50_ms", "p99_ms", "runs", "snr_db", "cosine", "source"]),
    st.floats(allow_nan=False) | st.integers() | st.sampled_from(["inf", "adapter"]),
)


@pytest.mark.slow
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


def test_the_index_is_json_a_run_a_line_and_reads_back(tmp_path: Path) -> None:
    entries = [
        RunEntry(f"2026120{d}T020000Z-abcde{d}", "k", 1.7e9 + d, True, {"passed": d}, d)
        for d in range(1, 6)
    ]
    for entry in entries:
        kept = update_index(tmp_path, entry, keep=3)
    assert kept == entries[-3:]
    text = (tmp_path / INDEX_FILE).read_text(encoding="utf-8")
    doc = json.loads(text)
    assert doc["schema"] == 1 and doc["keep"] == 3 and len(doc["runs"]) == 3
    assert len(text.splitlines()) == 3 + 2  # a run a line, between the head and the tail
    assert read_index(tmp_path) == entries[-3:]
    assert [e.to_dict() for e in entries] == [asdict(e) for e in entries]
