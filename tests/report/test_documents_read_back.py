"""The report's documents are checked where they are read back: a damaged record, summary or
run start from an old run folder is refused or left out by name, never half-read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npu_hil.harness.report.records import TestRecord
from npu_hil.harness.report.runs import read_run_start, read_summary


def test_a_record_is_an_object_with_a_list_of_tensor_objects() -> None:
    record = TestRecord(nodeid="t::a", outcome="passed", duration_s=0.5)
    assert TestRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    with pytest.raises(TypeError, match="a record is a JSON object, not list"):
        TestRecord.from_dict([record.to_dict()])
    with pytest.raises(TypeError, match="tensors are a list of objects"):
        TestRecord.from_dict({**record.to_dict(), "tensors": ["x"]})


@pytest.mark.parametrize(
    "summary",
    [
        {"meta": "a text", "outcomes": {}},
        {"meta": {}, "outcomes": [1, 2]},
        ["not", "an", "object"],
    ],
)
def test_a_summary_whose_parts_are_not_objects_is_left_out(tmp_path: Path, summary: object) -> None:
    (tmp_path / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    assert read_summary(tmp_path) is None


def test_a_summary_of_objects_is_read(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(
        json.dumps({"meta": {"run_id": "r1"}, "outcomes": {"passed": 3}}), encoding="utf-8"
    )
    summary = read_summary(tmp_path)
    assert summary is not None and summary["outcomes"] == {"passed": 3}


def test_a_run_start_whose_key_is_not_text_is_left_out(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"run_key": 7}), encoding="utf-8")
    assert read_run_start(tmp_path) is None
    (tmp_path / "run.json").write_text(json.dumps({"run_key": "nightly"}), encoding="utf-8")
    start = read_run_start(tmp_path)
    assert start is not None and start["run_key"] == "nightly"
