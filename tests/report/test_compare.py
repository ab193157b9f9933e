"""Comparison with the previous runs in the same reports folder."""

from __future__ import annotations

import json
from pathlib import Path

from npu_hil.harness.report.records import TestRecord
from npu_hil.harness.report.writer import write_run

KIND = {"run_key": "nightly-key", "complete": True}


def _run(root: Path, name: str, outcomes: dict[str, str], **meta: object) -> dict[str, object]:
    run_dir = root / name
    records = [TestRecord(f"t.py::{test}", outcome, 0.1) for test, outcome in outcomes.items()]
    write_run(run_dir, records, {**KIND, "started": name[:15], **meta})
    result: dict[str, object] = json.loads((run_dir / "comparison.json").read_text())
    return result


def _ids(entries: object) -> set[str]:
    assert isinstance(entries, list)
    return {e["nodeid"].split("::")[1] for e in entries}


def test_first_run_has_no_previous(tmp_path: Path) -> None:
    comparison = _run(tmp_path, "20260101T000000Z-000001", {"a": "failed"})
    assert comparison["previous_run"] is None
    assert _ids(comparison["new_failures"]) == {"a"}


def test_new_fixed_still_and_flaky_over_three_runs(tmp_path: Path) -> None:
    first = {
        "steady": "passed",
        "flaky": "passed",
        "fixed": "failed",
        "still": "failed",
        "broke": "passed",
        "skip": "skipped",
    }
    second = {**first, "flaky": "failed", "fixed": "failed"}
    third = {**first, "flaky": "passed", "fixed": "passed", "broke": "error", "fresh": "failed"}
    _run(tmp_path, "20260101T000000Z-000001", first)
    _run(tmp_path, "20260102T000000Z-000002", second)
    comparison = _run(tmp_path, "20260103T000000Z-000003", third)
    assert comparison["previous_run"] == "20260102T000000Z-000002"
    assert comparison["window"] == [
        "20260101T000000Z-000001",
        "20260102T000000Z-000002",
        "20260103T000000Z-000003",
    ]
    assert _ids(comparison["new_failures"]) == {"broke", "fresh"}
    assert _ids(comparison["fixed"]) == {"fixed", "flaky"}
    assert _ids(comparison["still_failing"]) == {"still"}
    assert _ids(comparison["flaky"]) == {"flaky"}
    flaky = comparison["flaky"]
    assert isinstance(flaky, list)
    assert flaky[0]["history"] == ["passed", "failed", "passed"]
    html = (tmp_path / "20260103T000000Z-000003" / "report.html").read_text()
    assert "Since 20260102T000000Z-000002" in html
    assert "started 20260102T000000" in html and "same suite, inventory and selection" in html
    assert [run["run_id"] for run in comparison["trend"]] == comparison["window"]
    assert "Flaky (flipped more than once in the last runs): 1" in html


def test_one_flip_is_not_flaky(tmp_path: Path) -> None:
    _run(tmp_path, "20260101T000000Z-000001", {"a": "passed"})
    _run(tmp_path, "20260102T000000Z-000002", {"a": "passed"})
    comparison = _run(tmp_path, "20260103T000000Z-000003", {"a": "failed"})
    assert comparison["flaky"] == []
    assert _ids(comparison["new_failures"]) == {"a"}


def test_crashed_previous_run_is_no_baseline(tmp_path: Path) -> None:
    from npu_hil.harness.report.runs import append_record

    _run(tmp_path, "20260101T000000Z-000001", {"a": "passed"})
    crashed = tmp_path / "20260102T000000Z-000002"
    crashed.mkdir()
    append_record(crashed, TestRecord("t.py::a", "failed", 0.1))
    _run(tmp_path, "20260103T000000Z-000003", {"a": "failed"}, complete=False)
    comparison = _run(tmp_path, "20260104T000000Z-000004", {"a": "failed"})
    assert comparison["previous_run"] == "20260101T000000Z-000001"
    assert _ids(comparison["new_failures"]) == {"a"}


def test_runs_of_another_kind_are_never_the_baseline(tmp_path: Path) -> None:
    """The test suite's own run and a -k debugging run land in the same reports folder."""
    _run(tmp_path, "20260101T000000Z-000001", {"a": "failed", "b": "passed"})
    _run(tmp_path, "20260102T000000Z-000002", {"a": "passed"}, run_key="tox-key")
    _run(tmp_path, "20260103T000000Z-000003", {"a": "passed"}, run_key="k-key")
    _run(tmp_path, "20260103T120000Z-000004", {"a": "passed"}, run_key="")  # an old run
    comparison = _run(tmp_path, "20260104T000000Z-000005", {"a": "failed", "b": "failed"})
    assert comparison["previous_run"] == "20260101T000000Z-000001"
    assert comparison["previous_started"] == "20260101T000000"
    assert _ids(comparison["still_failing"]) == {"a"}
    assert _ids(comparison["new_failures"]) == {"b"}


def test_compare_with_names_the_baseline(tmp_path: Path) -> None:
    _run(tmp_path, "20260101T000000Z-000001", {"a": "passed"})
    _run(tmp_path, "20260102T000000Z-000002", {"a": "failed"}, run_key="k-key")
    comparison = _run(
        tmp_path,
        "20260103T000000Z-000003",
        {"a": "failed"},
        compare_with="20260102T000000Z-000002",
    )
    assert comparison["previous_run"] == "20260102T000000Z-000002"
    assert "--compare-with" in str(comparison["baseline"])
    assert _ids(comparison["still_failing"]) == {"a"}
    missing = _run(tmp_path, "20260104T000000Z-000004", {"a": "failed"}, compare_with="nope")
    assert missing["previous_run"] is None and "nope" in str(missing["baseline"])


def test_later_and_foreign_folders_are_ignored(tmp_path: Path) -> None:
    _run(tmp_path, "20260105T000000Z-000005", {"a": "failed"})
    (tmp_path / "notes").mkdir()
    comparison = _run(tmp_path, "20260101T000000Z-000001", {"a": "passed"})
    assert comparison["previous_run"] is None


def _crash(root: Path, name: str, key: str, outcomes: dict[str, str]) -> Path:
    """A run killed before its summary.json: its run.json and records only, as the plugin
    leaves them."""
    from npu_hil.harness.report.runs import append_record, write_run_start

    run_dir = root / name
    run_dir.mkdir()
    write_run_start(run_dir, {"run_id": name, "run_key": key, "started": name[:15]})
    for test, outcome in outcomes.items():
        append_record(run_dir, TestRecord(f"t.py::{test}", outcome, 0.1))
    return run_dir


def test_a_killed_previous_run_is_named_not_skipped_silently(tmp_path: Path) -> None:
    _run(tmp_path, "20260101T000000Z-000001", {"a": "passed", "b": "passed"})
    _crash(tmp_path, "20260102T000000Z-000002", "nightly-key", {"a": "failed"})
    _crash(tmp_path, "20260102T120000Z-000009", "other-key", {"a": "failed"})
    comparison = _run(tmp_path, "20260103T000000Z-000003", {"a": "failed", "b": "passed"})
    assert comparison["previous_run"] == "20260101T000000Z-000001"
    assert [e["run_id"] for e in comparison["previous_incomplete"]] == ["20260102T000000Z-000002"]
    why = comparison["previous_incomplete"][0]["why"]
    assert "no summary.json" in why and "1 test records" in why
    assert "20260102T000000Z-000002, is INCOMPLETE" in str(comparison["baseline"])
    run_dir = tmp_path / "20260103T000000Z-000003"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["comparison"]["previous_incomplete"] == 1
    assert "INCOMPLETE" in summary["comparison"]["baseline"]
    html = (run_dir / "report.html").read_text()
    assert 'class="banner warn incomplete"' in html and "20260102T000000Z-000002" in html


def test_a_stopped_run_is_named_even_without_any_complete_one(tmp_path: Path) -> None:
    _run(tmp_path, "20260101T000000Z-000001", {"a": "failed"}, complete=False, pytest_exit=2)
    comparison = _run(tmp_path, "20260102T000000Z-000002", {"a": "failed"})
    assert comparison["previous_run"] is None
    (entry,) = comparison["previous_incomplete"]
    assert entry["run_id"] == "20260101T000000Z-000001"
    assert "stopped before its last test (pytest exit 2)" in entry["why"]
    assert "INCOMPLETE" in str(comparison["baseline"])


def test_incomplete_runs_older_than_the_baseline_are_not_repeated(tmp_path: Path) -> None:
    _crash(tmp_path, "20260101T000000Z-000001", "nightly-key", {"a": "failed"})
    _run(tmp_path, "20260102T000000Z-000002", {"a": "passed"})
    comparison = _run(tmp_path, "20260103T000000Z-000003", {"a": "passed"})
    assert comparison["previous_run"] == "20260102T000000Z-000002"
    assert comparison["previous_incomplete"] == []
    assert "INCOMPLETE" not in str(comparison["baseline"])


def test_compare_with_an_incomplete_run_says_so(tmp_path: Path) -> None:
    _run(tmp_path, "20260101T000000Z-000001", {"a": "failed"}, complete=False, incomplete=True)
    comparison = _run(
        tmp_path, "20260102T000000Z-000002", {"a": "failed"}, compare_with="20260101T000000Z-000001"
    )
    assert comparison["previous_run"] == "20260101T000000Z-000001"
    assert "that run is INCOMPLETE: it crashed" in str(comparison["baseline"])


def test_earlier_runs_are_read_from_their_outcomes_index(tmp_path: Path) -> None:
    _run(tmp_path, "20260101T000000Z-000001", {"a": "failed", "b": "passed"})
    first = tmp_path / "20260101T000000Z-000001"
    index = json.loads((first / "outcomes.json").read_text())
    assert index == {"schema": 1, "cases": [["t.py::a", "", "failed"], ["t.py::b", "", "passed"]]}
    # what a comparison reads is the index: change it and the comparison follows
    index["cases"][1][2] = "failed"
    (first / "outcomes.json").write_text(json.dumps(index))
    comparison = _run(tmp_path, "20260102T000000Z-000002", {"a": "failed", "b": "failed"})
    assert _ids(comparison["still_failing"]) == {"a", "b"}


def test_a_run_of_an_older_harness_is_compared_from_its_summary_records(tmp_path: Path) -> None:
    _run(tmp_path, "20260101T000000Z-000001", {"a": "failed", "b": "passed"})
    first = tmp_path / "20260101T000000Z-000001"
    (first / "outcomes.json").unlink()
    summary = json.loads((first / "summary.json").read_text())
    summary["schema"] = 2
    summary["records"] = [
        {"nodeid": "t.py::a", "board": None, "outcome": "failed"},
        {"nodeid": "t.py::b", "board": None, "outcome": "passed"},
    ]
    (first / "summary.json").write_text(json.dumps(summary))
    comparison = _run(tmp_path, "20260102T000000Z-000002", {"a": "passed", "b": "failed"})
    assert _ids(comparison["fixed"]) == {"a"} and _ids(comparison["new_failures"]) == {"b"}
    assert comparison["trend"][0]["per_board"] == {
        "(no board)": {"passed": 1, "failed": 1, "error": 0, "skipped": 0}
    }
