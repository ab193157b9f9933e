"""The history store on disk: a run's measurements.json and the reports root's index."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_hil.harness.history.model import INDEX_FILE, MEASUREMENTS_FILE, CasePoint, RunEntry
from npu_hil.harness.history.store import (
    load_history,
    read_index,
    read_measurements,
    update_index,
    write_measurements,
)


def run_id(i: int) -> str:
    return f"20261201T{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}Z-{i:06x}"


def point(rid: str, p50: float, board: str = "rk3588-01", outcome: str = "passed") -> CasePoint:
    return CasePoint(
        run_id=rid,
        nodeid=f"tests/hil/test_x.py::test_identity[{board}]",
        board=board,
        target="rk3588",
        outcome=outcome,
        ran_on="sim",
        latency={"p50_ms": p50, "p99_ms": p50 * 1.5, "runs": 1, "source": "adapter"},
        accuracy={"snr_db": "inf", "cosine": 1.0},
    )


def add_run(
    root: Path, i: int, p50: float, *, key: str = "k1", complete: bool = True, keep: int = 200
) -> RunEntry:
    rid = run_id(i)
    (root / rid).mkdir(parents=True)
    entry = RunEntry(rid, key, 1_764_000_000.0 + i, complete, {"passed": 1}, 1)
    write_measurements(root / rid, entry, [point(rid, p50)])
    update_index(root, entry, keep=keep)
    return entry


def test_points_come_back_oldest_first_per_case(tmp_path: Path) -> None:
    for i, p50 in enumerate((1.0, 2.0, 3.0)):
        add_run(tmp_path, i, p50)
    history = load_history(tmp_path, "k1")
    assert [e.run_id for e in history.runs] == [run_id(0), run_id(1), run_id(2)]
    (series,) = history.points.values()
    assert [p.latency["p50_ms"] for p in series if p.latency] == [1.0, 2.0, 3.0]
    assert series[0].accuracy == {"snr_db": "inf", "cosine": 1.0}


def test_the_index_keeps_the_newest_runs_and_the_folders_stay(tmp_path: Path) -> None:
    for i in range(5):
        add_run(tmp_path, i, float(i), keep=3)
    assert [e.run_id for e in read_index(tmp_path)] == [run_id(2), run_id(3), run_id(4)]
    assert (tmp_path / run_id(0) / MEASUREMENTS_FILE).is_file()
    assert len(load_history(tmp_path).runs) == 3


def test_key_completeness_and_before_select_the_runs(tmp_path: Path) -> None:
    add_run(tmp_path, 0, 1.0, key="k1")
    add_run(tmp_path, 1, 1.0, key="k2")
    add_run(tmp_path, 2, 1.0, key="k1", complete=False)
    add_run(tmp_path, 3, 1.0, key="k1")
    assert [e.run_id for e in load_history(tmp_path, "k1").runs] == [run_id(0), run_id(3)]
    every = load_history(tmp_path, "k1", complete_only=False)
    assert [e.run_id for e in every.runs] == [run_id(0), run_id(2), run_id(3)]
    assert [e.run_id for e in load_history(tmp_path, "k1", before=run_id(3)).runs] == [run_id(0)]
    assert [e.run_id for e in load_history(tmp_path, "k1", limit=1).runs] == [run_id(3)]
    assert load_history(tmp_path, "k1", limit=0).runs == []


@pytest.mark.parametrize("damage", ["missing", "torn", "other-schema", "not-a-mapping"])
def test_a_lost_or_damaged_index_is_rebuilt_from_the_run_folders(
    tmp_path: Path, damage: str
) -> None:
    for i in range(3):
        add_run(tmp_path, i, 1.0)
    index = tmp_path / INDEX_FILE
    if damage == "missing":
        index.unlink()
    elif damage == "torn":
        index.write_text(index.read_text()[:40])
    elif damage == "other-schema":
        index.write_text(json.dumps({"schema": 99, "runs": []}))
    else:
        index.write_text("[1, 2]")
    assert [e.run_id for e in read_index(tmp_path)] == [run_id(0), run_id(1), run_id(2)]


def test_a_damaged_run_file_is_left_out_and_the_others_load(tmp_path: Path) -> None:
    for i in range(3):
        add_run(tmp_path, i, float(i))
    (tmp_path / run_id(1) / MEASUREMENTS_FILE).write_text('{"schema": 1, "run_id": ')
    assert read_measurements(tmp_path / run_id(1)) is None
    assert [e.run_id for e in load_history(tmp_path).runs] == [run_id(0), run_id(2)]


def test_a_root_that_does_not_exist_has_no_history(tmp_path: Path) -> None:
    assert read_index(tmp_path / "nowhere") == []
    assert load_history(tmp_path / "nowhere").runs == []


def test_keep_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        update_index(tmp_path, RunEntry(run_id(0), "k", 0.0, True), keep=0)


def _add_from_process(args: tuple[str, int]) -> None:
    root, i = args
    add_run(Path(root), i, 1.0)


@pytest.mark.slow
def test_runs_ending_at_once_all_land_in_the_index(tmp_path: Path) -> None:
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        pool.map(_add_from_process, [(str(tmp_path), i) for i in range(16)])
    assert [e.run_id for e in read_index(tmp_path)] == [run_id(i) for i in range(16)]


finite = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)


@pytest.mark.slow
@settings(max_examples=50, deadline=None)
@given(
    p50=finite,
    snr=st.one_of(finite, st.just("inf")),
    cosine=st.one_of(st.none(), st.floats(-1.0, 1.0)),
    outcome=st.sampled_from(["passed", "failed", "error", "skipped"]),
    noisy=st.text(max_size=40).filter(lambda s: "\x00" not in s),
)
def test_a_point_round_trips(
    tmp_path_factory: pytest.TempPathFactory,
    p50: float,
    snr: float | str,
    cosine: float | None,
    outcome: str,
    noisy: str,
) -> None:
    root = tmp_path_factory.mktemp("h")
    entry = RunEntry(run_id(7), "k", 5.0, True, {outcome: 1}, 1)
    (root / entry.run_id).mkdir()
    written = CasePoint(
        entry.run_id,
        "t.py::c[b]",
        "b",
        "rk3588",
        outcome,
        "sim",
        {"p50_ms": p50},
        {"snr_db": snr, "cosine": cosine},
        noisy,
    )
    write_measurements(root / entry.run_id, entry, [written])
    found = read_measurements(root / entry.run_id)
    assert found is not None
    read_entry, (read_point,) = found
    assert read_entry == entry
    assert read_point.latency == written.latency and read_point.accuracy == written.accuracy
    assert read_point.outcome == outcome
