"""The report files of a run: JUnit XML, summary.json, report.html, run folders."""

from __future__ import annotations

import base64
import json
import re
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from npu_hil.harness.report.records import TestRecord
from npu_hil.harness.report.runs import RUN_ID_PATTERN, new_run_dir, new_run_id
from npu_hil.harness.report.writer import write_run

META = {"started": "2026-01-01T00:00:00Z", "backend": "auto", "inventory": "inventory.yaml"}


def test_run_dirs_are_new_and_sort_in_start_order(tmp_path: Path) -> None:
    dirs = [new_run_dir(tmp_path / "reports") for _ in range(5)]
    assert len(set(dirs)) == 5
    assert all(d.is_dir() and RUN_ID_PATTERN.match(d.name) for d in dirs)
    stamps = [
        datetime(2026, 1, 1, 23, 59, 59, tzinfo=timezone.utc) + timedelta(seconds=s)
        for s in (0, 1, 86400, 10**7)
    ]
    ids = [new_run_id(stamp) for stamp in stamps]
    assert ids == sorted(ids)
    assert ids[0].startswith("20260101T235959Z-")


@pytest.mark.slow
def test_junit_xml_parses_with_counts_and_properties(
    sample_records: tuple[Path, list[TestRecord]],
) -> None:
    run_dir, records = sample_records
    write_run(run_dir, records, META)
    suite = ET.parse(run_dir / "junit.xml").getroot()
    assert suite.tag == "testsuite"
    counts = [suite.get(k) for k in ("tests", "failures", "errors", "skipped")]
    assert counts == ["5", "1", "1", "1"]
    cases = suite.findall("testcase")
    assert len(cases) == 5
    for case in cases:
        assert case.get("classname") == "tests.hil.test_layouts"
        assert case.get("name", "").startswith("test_roundtrip[")
        assert float(case.get("time", "x")) == 0.25
        props = {p.get("name"): p.get("value") for p in case.iterfind("properties/property")}
        assert {"board", "target", "backend", "simulated"} <= set(props)
        assert props["runtime.librknnrt"] == "2.3.2"
        assert str(props["artifact.model.onnx"]).startswith("sha256:")
    by_board = {c.get("name"): c for c in cases}
    failed = by_board["test_roundtrip[rk3588-01-b]"].find("failure")
    assert failed is not None and failed.get("message") == "b failed"
    assert "buffers differ" in (failed.text or "")
    assert by_board["test_roundtrip[kl730-01-c]"].find("error") is not None
    assert by_board["test_roundtrip[kl730-01-d]"].find("skipped") is not None
    hw = by_board["test_roundtrip[rdk-x5-01-e]"]
    hw_props = {p.get("name"): p.get("value") for p in hw.iterfind("properties/property")}
    assert hw_props["simulated"] == "false" and hw_props["ran_on"] == "hw"
    skipped = by_board["test_roundtrip[kl730-01-d]"]
    skipped_props = {p.get("name"): p.get("value") for p in skipped.iterfind("properties/property")}
    assert skipped_props["ran_on"] == "none"


def test_junit_survives_control_characters(tmp_path: Path) -> None:
    record = TestRecord("t.py::test_x", "failed", 0.1, message="bad \x00\x07 bytes")
    run_dir = new_run_dir(tmp_path)
    write_run(run_dir, [record], {})
    failure = ET.parse(run_dir / "junit.xml").getroot().find("testcase/failure")
    assert failure is not None and "bytes" in failure.get("message", "")


@pytest.mark.slow
def test_summary_json_schema(sample_records: tuple[Path, list[TestRecord]]) -> None:
    run_dir, records = sample_records
    write_run(run_dir, records, META)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["schema"] == 4
    assert summary["total"] == 5
    assert summary["outcomes"] == {"passed": 2, "failed": 1, "error": 1, "skipped": 1}
    assert (summary["simulated"], summary["hardware"], summary["not_run"]) == (3, 1, 1)
    assert summary["by_backend"]["hardware"]["passed"] == 1
    assert set(summary["per_board"]) == {"kl730-01", "rdk-x5-01", "rk3588-01"}
    assert summary["per_board"]["kl730-01"]["error"] == 1
    assert summary["per_board"]["rdk-x5-01"]["simulated"] is False
    assert summary["per_target"]["rk3588"] == {"passed": 1, "failed": 1, "error": 0, "skipped": 0}
    assert summary["meta"]["run_id"] == run_dir.name
    assert summary["meta"]["backend"] == "auto"
    # the records stay in records.jsonl: a summary of 12,000 cases is not their copy
    assert "records" not in summary and summary["records_file"] == "records.jsonl"
    assert summary["comparison"]["new_failures"] == 2


@pytest.mark.slow
def test_html_is_self_contained_with_boards_marking_and_images(
    sample_records: tuple[Path, list[TestRecord]],
) -> None:
    run_dir, records = sample_records
    write_run(run_dir, records, META)
    html = (run_dir / "report.html").read_text()
    for board in ("rk3588-01", "kl730-01", "rdk-x5-01"):
        assert board in html
    # the skipped case ran on neither
    assert "MIXED: 1 tests on hardware (HW), 3 on simulated boards (SIM); 1 ran on no board" in html
    # every test row says SIM, HW or - (ran on no board)
    rows = re.findall(r'<tr class="case row-[a-z]+".*?</tr>', html, flags=re.S)
    assert len(rows) == 5
    badges = [re.findall(r'class="b (sim|hw|none)"', r) for r in rows]
    assert sorted(b[0] for b in badges) == ["hw", "none", "sim", "sim", "sim"]
    assert all(len(b) == 1 for b in badges)
    # the heatmap is embedded, not linked
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == 1
    assert base64.b64decode(images[0])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "w_stride: predicted 8, device reported 16" in html
    assert "expected 60, got 44" in html
    # nothing is fetched: no external script, style sheet or image
    assert "http://" not in html and "https://" not in html
    assert "<link" not in html and not re.search(r"<script[^>]+src=", html)
    # failures come before passes, new ones are flagged
    assert html.index("rk3588-01-b]") < html.index("rk3588-01-a]")
    assert ">NEW<" in html


def test_html_header_all_simulated(tmp_path: Path) -> None:
    run_dir = new_run_dir(tmp_path)
    write_run(run_dir, [TestRecord("t.py::test_a", "passed", 0.1, simulated=True)], {})
    html = (run_dir / "report.html").read_text()
    assert "SIMULATED: all 1 tests that ran, ran on simulated boards" in html


def test_missing_heatmap_is_noted_not_fatal(tmp_path: Path) -> None:
    from npu_hil.harness.report.records import TensorFinding

    finding = TensorFinding("out", "output", "different", "", heatmap="gone.png")
    record = TestRecord("t.py::test_a", "failed", 0.1, tensors=[finding])
    run_dir = new_run_dir(tmp_path)
    write_run(run_dir, [record], {})
    assert "heatmap gone.png missing" in (run_dir / "report.html").read_text()


@pytest.mark.slow
def test_no_temporary_files_left(sample_records: tuple[Path, list[TestRecord]]) -> None:
    run_dir, records = sample_records
    write_run(run_dir, records, META)
    names = {p.name for p in run_dir.iterdir()}
    assert names == {
        "heatmaps",
        "junit.xml",
        "summary.json",
        "comparison.json",
        "report.html",
        "outcomes.json",
    }


def test_junit_properties_are_not_repeated(tmp_path: Path) -> None:
    record = TestRecord(
        "t.py::test_a",
        "passed",
        0.1,
        board="rk3588-01",
        simulated=True,
        properties={"board": "rk3588-01", "simulated": "true", "fallback_reason": "no hw"},
    )
    run_dir = new_run_dir(tmp_path)
    write_run(run_dir, [record], {})
    names = [
        p.get("name")
        for p in ET.parse(run_dir / "junit.xml").getroot().iter("property")
        if p.get("name") in ("board", "simulated", "fallback_reason")
    ]
    assert sorted(names) == ["board", "fallback_reason", "simulated"]


def test_cases_without_a_board_are_neither_hardware_nor_simulated(tmp_path: Path) -> None:
    """A SoC no board serves is a skipped case on no board: a simulated run with some of those
    is still a simulated run, never "mixed" with hardware."""
    records = [
        TestRecord("t.py::test_a[rk3588-01]", "passed", 0.1, board="rk3588-01", simulated=True),
        TestRecord("t.py::test_a[kl730]", "skipped", 0.0, target="kl730", message="no board"),
    ]
    run_dir = new_run_dir(tmp_path)
    write_run(run_dir, records, {})
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["simulated"], summary["hardware"], summary["no_board"]) == (1, 0, 1)
    assert summary["not_run"] == 1
    html = (run_dir / "report.html").read_text()
    assert "SIMULATED: all 1 tests that ran, ran on simulated boards" in html
    assert "1 ran on no board" in html and "MIXED" not in html


def test_board_health_lists_each_event_once_with_its_cases(tmp_path: Path) -> None:
    cycled = "power cycled: ping timed out after 5 s; healthy again"
    records = [
        TestRecord(
            f"t.py::test_{n}[rk3588-02]",
            "passed",
            0.1,
            board="rk3588-02",
            ran_on="hw",
            board_events=[cycled],
        )
        for n in range(3)
    ] + [
        TestRecord(
            "t.py::test_r[rk3588-01]",
            "passed",
            0.1,
            board="rk3588-01",
            ran_on="hw",
            properties={"retries": "1"},
        ),
    ]
    run_dir = new_run_dir(tmp_path)
    write_run(run_dir, records, {})
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["board_health"]["rk3588-02"] == [{"event": cycled, "cases": 3}]
    assert summary["board_health"]["rk3588-01"][0]["event"].startswith("model run retried")
    html = (run_dir / "report.html").read_text()
    health = html[html.index('id="health"') : html.index('id="compare"')]
    assert health.count(cycled) == 1 and "<td>3</td>" in health
    assert "HARDWARE: all 4 tests that ran, ran on real boards" in html
