"""A crashed run leaves its completed records readable, and the report rebuilds from them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from npu_hil.harness.report import atomic
from npu_hil.harness.report.records import TensorFinding, TestRecord
from npu_hil.harness.report.runs import append_record, load_records, new_run_dir
from npu_hil.harness.report.writer import write_run

CRASHING_RUN = """
import os, sys
from npu_hil.harness.report.records import TestRecord
from npu_hil.harness.report.runs import append_record
run_dir = sys.argv[1]
for i in range(20):
    append_record(run_dir, TestRecord(f"t.py::test_{i}", "passed" if i % 3 else "failed", 0.1,
                                      board="rk3588-01", simulated=True))
# a torn line, as if the process died in the middle of a write, then a hard kill
with open(os.path.join(run_dir, "records.jsonl"), "a") as f:
    f.write('{"nodeid": "t.py::test_torn", "outc')
os._exit(137)
"""


@pytest.mark.slow
def test_crash_leaves_records_readable_and_write_run_rebuilds(tmp_path: Path) -> None:
    run_dir = new_run_dir(tmp_path)
    proc = subprocess.run([sys.executable, "-c", CRASHING_RUN, str(run_dir)], check=False)
    assert proc.returncode == 137
    assert not (run_dir / "summary.json").exists()
    records = load_records(run_dir)
    assert [r.nodeid for r in records] == [f"t.py::test_{i}" for i in range(20)]
    write_run(run_dir, None, {"crashed": True})
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["total"] == 20
    assert summary["outcomes"]["failed"] == 7
    assert summary["meta"]["crashed"] is True
    assert ET.parse(run_dir / "junit.xml").getroot().get("tests") == "20"


def test_records_round_trip_with_tensors(tmp_path: Path) -> None:
    record = TestRecord(
        "t.py::test_a",
        "failed",
        1.5,
        board="kl730-01",
        tensors=[TensorFinding("o", "output", "different", "s", "h.png", ["x"])],
    )
    append_record(tmp_path, record)
    append_record(tmp_path, record)
    assert load_records(tmp_path) == [record, record]


def test_rerun_record_replaces_the_earlier_one(tmp_path: Path) -> None:
    append_record(tmp_path, TestRecord("t.py::a", "error", 0.1))
    append_record(tmp_path, TestRecord("t.py::a", "passed", 0.1))
    write_run(tmp_path, None, {})
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["total"] == 1 and summary["outcomes"]["passed"] == 1


def test_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "summary.json"
    target.write_text("old")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic.write_text_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


@pytest.mark.slow
def test_concurrent_appends_keep_lines_whole(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from npu_hil.harness.report.records import TestRecord\n"
        "from npu_hil.harness.report.runs import append_record\n"
        "for i in range(200):\n"
        "    append_record(sys.argv[1], TestRecord(f't.py::w{sys.argv[2]}_{i}', 'passed', 0.0,"
        " message='x' * 500))\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path), str(w)]) for w in range(4)
    ]
    assert all(p.wait() == 0 for p in procs)
    assert len(load_records(tmp_path)) == 800


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_report_files_get_the_umasks_mode(tmp_path: Path, umask: int, mode: int) -> None:
    """Not mkstemp's 0600: a CI server or a colleague reads the reports; the run folder is the
    private part."""
    import stat

    old = os.umask(umask)
    try:
        run_dir = new_run_dir(tmp_path / "reports")
        append_record(run_dir, TestRecord("t.py::a", "passed", 0.1))
        write_run(run_dir, None, {"run_key": "k"})
    finally:
        os.umask(old)
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "reports").stat().st_mode) == 0o700
    files = sorted(p.name for p in run_dir.iterdir())
    assert files == sorted(
        [
            "junit.xml",
            "summary.json",
            "comparison.json",
            "report.html",
            "records.jsonl",
            "outcomes.json",
        ]
    )
    for name in files:
        assert stat.S_IMODE((run_dir / name).stat().st_mode) == mode, name


def test_appended_lines_are_forced_to_disk_once_a_second_and_at_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    clock = [1000.0]
    monkeypatch.setattr(atomic.os, "fsync", fsync)
    monkeypatch.setattr(atomic.time, "monotonic", lambda: clock[0])
    run_dir = new_run_dir(tmp_path)
    records = run_dir / "records.jsonl"
    for i in range(50):  # 50 cases within a second: one forced write, the first
        append_record(run_dir, TestRecord(f"t.py::test_{i}", "passed", 0.01))
    assert synced == [str(records)]
    clock[0] += atomic.SYNC_INTERVAL_S
    append_record(run_dir, TestRecord("t.py::test_late", "passed", 0.01))
    assert synced == [str(records)] * 2
    synced.clear()
    write_run(run_dir, None, {})
    # The report forces the records' last lines out as well as its own files.
    assert str(records) in synced and len(load_records(run_dir)) == 51
