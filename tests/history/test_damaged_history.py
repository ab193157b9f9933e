"""Whatever an earlier run folder or the history index holds, a run's own report is written, its
exit is its tests' own, and each damaged file is named in the report and on the console: a
JSON bomb, a FIFO, a device, a directory, a planted symlink, numbers that are not finite. The
readers themselves are fuzzed: any bytes give the document or "left out", never an exception."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npu_hil.harness.history.store import load_history, read_index, read_measurements
from npu_hil.harness.report.runs import load_records, read_outcomes, read_run_start, read_summary
from tests.damage import plant

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

TESTS = """
import numpy as np
import pytest
from npu_hil.harness.plugin import assert_run_ok

X = {"input": np.zeros((1, 3, 6, 7), np.uint8)}

@pytest.mark.soc("rk3588")
def test_one(run_model):
    assert_run_ok(run_model("conv3x3", X))
"""

DAMAGE = {
    # run id suffix: (file, how)
    "000001": ("measurements.json", "deep"),
    "000002": ("measurements.json", "fifo"),
    "000003": ("measurements.json", "dev-zero"),
    "000004": ("measurements.json", "folder"),
    "000005": ("measurements.json", "nan"),
    "000006": ("summary.json", "fifo"),
    "000007": ("summary.json", "deep"),
    "000008": ("outcomes.json", "fifo"),
    "000009": ("records.jsonl", "fifo"),
}


def _runs(reports: Path) -> list[Path]:
    return sorted(p for p in reports.iterdir() if p.is_dir() and p.name[0].isdigit())


def test_damage_in_earlier_runs_never_loses_a_report(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    first = project.runpytest_subprocess("-p", "no:cacheprovider")
    first.assert_outcomes(passed=1)
    reports = project.path / "reports"
    (good,) = _runs(reports)
    # Copies of a good run, older than it and of its kind, each with one file damaged.
    for suffix, (name, how) in DAMAGE.items():
        copy = reports / f"20200101T000000Z-{suffix}"
        shutil.copytree(good, copy)
        plant(copy / name, how)
    (reports / "history.json").unlink()  # the index is rebuilt from the run folders
    victim = project.path / "victim.txt"
    victim.write_text("not a lock")
    (reports / ".history.json.lock").unlink()
    (reports / ".history.json.lock").symlink_to(victim)

    second = project.runpytest_subprocess("-p", "no:cacheprovider")
    second.assert_outcomes(passed=1)
    assert second.ret == 0
    newest = _runs(reports)[-1]
    summary = json.loads((newest / "summary.json").read_text())
    assert (newest / "report.html").is_file() and (newest / "junit.xml").is_file()
    warnings = "\n".join(summary["run_warnings"])
    for suffix in ("000001", "000002", "000003", "000004", "000005"):
        assert f"20200101T000000Z-{suffix}/measurements.json" in warnings, warnings
    assert "nested at most 64 levels" in warnings and "a FIFO" in warnings
    assert "a symlink" in warnings and ".history.json.lock" in warnings
    assert victim.read_text() == "not a lock"  # the lock never truncated what it pointed at
    console = second.stdout.str()
    assert console.count("npu-hil: WARNING: ") == len(summary["run_warnings"])
    assert "WARNING: " in (newest / "report.html").read_text()

    (reports / ".history.json.lock").unlink()
    third = project.runpytest_subprocess("-p", "no:cacheprovider")
    assert third.ret == 0  # and every later run is its tests' own, too


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=300) | st.text(alphabet='[]{}":,0123456789eE.-NaIfty', max_size=300))
def test_the_readers_take_any_bytes(tmp_path: Path, data: bytes | str) -> None:
    run = tmp_path / "20200101T000000Z-aaaaaa"
    run.mkdir(exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    for name in ("measurements.json", "summary.json", "run.json", "outcomes.json"):
        (run / name).write_bytes(raw)
    (run / "records.jsonl").write_bytes(raw + b"\n" + raw)
    (tmp_path / "history.json").write_bytes(raw)
    problems: list[str] = []
    read_measurements(run, problems)
    read_index(tmp_path, problems)
    load_history(tmp_path)
    for found in (read_summary(run), read_run_start(run)):
        assert found is None or isinstance(found, dict)
    rows = read_outcomes(run)
    assert rows is None or isinstance(rows, list)
    assert isinstance(load_records(run), list)
    assert all(isinstance(p, str) and "\n" not in p for p in problems)


def test_npu_hil_history_names_a_damaged_run_and_shows_the_rest(tmp_path: Path) -> None:
    from tests.history.conftest import write_history

    reports = tmp_path / "reports"
    reports.mkdir()
    case = ("rk3588-01", "tests/t.py::test_case[rk3588-01]")
    index = write_history(reports, {case: ["passed", "failed", "passed"]})
    plant(reports / index[0].run_id / "measurements.json", "deep")
    (reports / "history.json").unlink()
    cmd = [sys.executable, "-m", "npu_hil.harness.cli.main", "history", "--reports", str(reports)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    (warning,) = done.stderr.strip().splitlines()
    assert warning.startswith("npu-hil history: WARNING: ") and index[0].run_id in warning
    assert "Traceback" not in done.stderr and "test_case" in done.stdout
