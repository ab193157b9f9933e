"""``npu-hil nightly`` end to end on a small stand-in suite.

The stand-in's conftest plays the plugin's part in the contract: it appends one record per test
to the run folder named in ``NPU_HIL_RUN_DIR`` and writes nothing else, so these tests check
what nightly itself does: the subprocess, the progress tail, the rebuilt report, the exit code.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import npu_hil.harness.suite
from npu_hil.harness.cli.nightly_cmd import RecordTail

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

CONFTEST = """
from npu_hil.harness.report.records import TestRecord
from npu_hil.harness.report.runs import run_dir_for_session
from npu_hil.harness.report.runs import append_record

def pytest_runtest_logreport(report):
    if report.when != "call":
        return
    board = report.nodeid.split("[")[-1].rstrip("]").split("-", 1)[1]
    append_record(run_dir_for_session("reports"), TestRecord(
        report.nodeid, report.outcome, report.duration, board=board,
        target=board.rsplit("-", 1)[0], backend="sim", simulated=True))
"""

SUITE = """
import os
import pytest

@pytest.mark.parametrize("unit", ["rk3588-01", "kl730-01"])
@pytest.mark.parametrize("case", range(3))
def test_case(unit, case):
    assert not (os.environ.get("BREAK") and unit == "kl730-01" and case == 1)
"""


def _checkout(tmp_path: Path) -> Path:
    suite = tmp_path / "tests" / "hil"
    suite.mkdir(parents=True)
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "test_suite.py").write_text(SUITE)
    shutil.copy(Path(__file__).parents[2] / "inventory.yaml", tmp_path / "inventory.yaml")
    return tmp_path


def _nightly(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "npu_hil.harness.cli.main", "nightly", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "160", **env},
        check=False,
    )


def _only_run(cwd: Path) -> Path:
    runs = [p for p in (cwd / "reports").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(runs) == 1
    return runs[0]


def test_nightly_all_pass_writes_report_and_exits_zero(tmp_path: Path) -> None:
    cwd = _checkout(tmp_path)
    proc = _nightly(cwd, "-n", "2", "--", "-q")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = _only_run(cwd)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["total"] == 6 and summary["outcomes"]["passed"] == 6
    assert set(summary["per_board"]) == {"rk3588-01", "kl730-01"}
    assert (run_dir / "report.html").exists() and (run_dir / "junit.xml").exists()
    assert "6 tests, SIMULATED" in proc.stdout
    assert "rk3588-01" in proc.stdout and "kl730-01" in proc.stdout
    assert f"report: {run_dir / 'report.html'}" in proc.stdout.replace("\n", "")
    assert "passed" in (run_dir / "pytest.log").read_text()


def test_nightly_exit_code_is_pytests_and_compares_with_last_night(tmp_path: Path) -> None:
    cwd = _checkout(tmp_path)
    assert _nightly(cwd).returncode == 0
    # a run with another selection is not last night's run, and is nobody's baseline either
    other = _nightly(cwd, "--target", "kl730", BREAK="1")
    assert other.returncode == 1 and "no comparison: no earlier complete run" in other.stdout
    proc = _nightly(cwd, BREAK="1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    runs = sorted(
        p for p in (cwd / "reports").iterdir() if p.is_dir() and not p.name.startswith(".")
    )
    assert f"since {runs[0].name} (started " in proc.stdout
    assert "1 new failures" in proc.stdout
    comparison = json.loads((runs[-1] / "comparison.json").read_text())
    assert comparison["previous_run"] == runs[0].name
    assert [e["nodeid"] for e in comparison["new_failures"]] == [
        "tests/hil/test_suite.py::test_case[1-kl730-01]"
    ]


PROVENANCE_CONFTEST = """
from npu_hil.harness.report.records import TestRecord
from npu_hil.harness.report.runs import run_dir_for_session
from npu_hil.harness.report.runs import append_record

REASON = "no connection after 4 attempts"

def pytest_runtest_logreport(report):
    if report.when != "call":
        return
    board = report.nodeid.split("[")[-1].rstrip("]").split("-", 1)[1]
    if board == "kl730-01":  # a hardware board whose hw_only cases were skipped
        record = TestRecord(report.nodeid, "skipped", 0.0, board=board, target="kl730",
                            backend="hw", simulated=False, message="hw_only: board is simulated")
    else:  # a dead board that fell back to a simulated one
        record = TestRecord(report.nodeid, report.outcome, report.duration, board=board,
                            target="rk3588", backend="sim", simulated=True, ran_on="sim",
                            board_events=["fell back to a simulated board: " + REASON],
                            properties={"fallback_reason": REASON})
    append_record(run_dir_for_session("reports"), record)
"""


def test_nightly_console_and_report_agree_on_provenance_and_health(tmp_path: Path) -> None:
    cwd = _checkout(tmp_path)
    (cwd / "tests" / "hil" / "conftest.py").write_text(PROVENANCE_CONFTEST)
    proc = _nightly(cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = _only_run(cwd)
    out = " ".join(proc.stdout.split())
    # skipped cases count as neither: nothing ran on hardware
    assert "6 tests, SIMULATED (3 on simulated boards, 3 ran on no board)" in out
    assert "MIXED" not in out and " HW " not in out
    assert (
        "board health: rk3588-01: fell back to a simulated board: no connection after 4 "
        "attempts (3 cases)" in out
    )
    html = (run_dir / "report.html").read_text()
    assert "SIMULATED: all 3 tests that ran, ran on simulated boards; 3 ran on no board" in html
    assert "MIXED" not in html and 'class="b hw"' not in html
    health = html[html.index('id="health"') : html.index('id="compare"')]
    assert "rk3588-01" in health and "no connection after 4 attempts" in health
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["meta"]["launched_by"] == "npu-hil nightly"
    assert "<code>npu-hil nightly</code>" in html


def test_nightly_compare_with_is_passed_on(tmp_path: Path) -> None:
    from npu_hil.harness.cli.main import build_parser

    args = build_parser().parse_args(["nightly", "--compare-with", "20260101T000000Z-abcdef"])
    from npu_hil.harness.cli.nightly_cmd import pytest_command

    cmd = pytest_command(args, Path("tests/hil"))
    assert cmd[cmd.index("--compare-with") + 1] == "20260101T000000Z-abcdef"


def test_nightly_with_a_missing_suite_is_bad_input(tmp_path: Path) -> None:
    proc = _nightly(tmp_path, "--suite", str(tmp_path / "nowhere"))
    assert proc.returncode == 2
    assert "no regression suite" in proc.stderr and "--suite" in proc.stderr


def test_with_no_suite_of_its_own_nightly_runs_the_shipped_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from npu_hil.harness.cli.main import build_parser
    from npu_hil.harness.cli.nightly_cmd import pytest_command, resolve_suite

    monkeypatch.chdir(tmp_path)
    shipped = resolve_suite(None)
    assert shipped == Path(npu_hil.harness.suite.__file__).parent
    assert sorted(p.name for p in shipped.glob("test_*.py")) == [
        "test_hil_horizon_layouts.py",
        "test_hil_kl730_layouts.py",
        "test_hil_preflight_negatives.py",
        "test_hil_reference_models.py",
        "test_hil_rockchip_layouts.py",
    ]
    cmd = pytest_command(build_parser().parse_args(["nightly"]), shipped)
    assert cmd[cmd.index("--rootdir") + 1] == str(shipped)  # ids independent of the install
    # and pytest's cache is not written into the installed package
    assert cmd[cmd.index("no:cacheprovider") - 1] == "-p"
    (tmp_path / "tests" / "hil").mkdir(parents=True)
    assert resolve_suite(None) == tmp_path / "tests" / "hil"  # a suite of the user's own wins


def test_record_tail_reads_whole_lines_only(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    tail = RecordTail(path)
    tail.poll()
    path.write_text('{"board": "a", "outcome": "passed", "simulated": true}\n{"board": "a", "ou')
    tail.poll()
    assert dict(tail.per_board["a"]) == {"passed": 1}
    with path.open("a") as handle:
        handle.write('tcome": "failed"}\n')
    tail.poll()
    assert dict(tail.per_board["a"]) == {"passed": 1, "failed": 1}
    assert tail.simulated["a"] is True


def test_record_tail_names_where_cases_ran(tmp_path: Path) -> None:
    """The live table says what the final one says: a skipped case on a hardware board is not
    hardware."""
    from npu_hil.harness.report.records import TestRecord
    from npu_hil.harness.report.runs import append_record

    tail = RecordTail(tmp_path / "records.jsonl")
    append_record(tmp_path, TestRecord("t::a[hw-01]", "skipped", 0.0, board="hw-01"))
    append_record(tmp_path, TestRecord("t::a[rk-01]", "passed", 0.1, board="rk-01", ran_on="hw"))
    append_record(
        tmp_path,
        TestRecord("t::b[rk-01]", "passed", 0.1, board="rk-01", simulated=True, ran_on="sim"),
    )
    tail.poll()
    assert (tail.kind("hw-01"), tail.kind("rk-01"), tail.kind("none")) == ("-", "HW+SIM", "-")


def test_the_live_table_shows_boards_in_trouble_first_and_sums_the_rest(tmp_path: Path) -> None:
    from rich.console import Console

    from npu_hil.harness.cli.nightly_cmd import PROGRESS_ROWS, _progress_table
    from npu_hil.harness.report.records import OUTCOMES

    path = tmp_path / "records.jsonl"
    lines = [f'{{"board": "b{i:03d}", "outcome": "passed"}}' for i in range(200)]
    lines.append('{"board": "b150", "outcome": "failed"}')
    path.write_text("\n".join(lines) + "\n")
    tail = RecordTail(path)
    tail.poll()
    table = _progress_table(tail, 3.0)
    assert table.row_count == PROGRESS_ROWS + 1
    console = Console(width=120, record=True)
    console.print(table)
    text = console.export_text()
    assert text.index("b150") < text.index("b000")  # the board with a failure leads
    assert "b199" not in text
    # The last row sums the 180 boards not shown: 180 cases passed, none failed.
    (last,) = [line for line in text.splitlines() if "180 more boards" in line]
    cells = [cell.strip() for cell in last.split("│")[3:-1]]
    assert cells == [str(180 if o == "passed" else 0) for o in OUTCOMES]


@pytest.mark.parametrize("autoload", ["", "1"])
def test_pytest_command(autoload: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from npu_hil.harness.cli.main import build_parser
    from npu_hil.harness.cli.nightly_cmd import pytest_command

    if autoload:
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    else:
        monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    args = build_parser().parse_args(
        ["nightly", "--inventory", "farm.yaml", "-n", "6", "--backend", "hw", "--", "-k", "x"]
    )
    cmd = pytest_command(args, Path("tests/hil"))
    assert cmd[1:4] == ["-m", "pytest", "tests/hil"]
    assert ("-p" in cmd) == bool(autoload)
    tail = cmd[cmd.index("--reports") :]
    assert tail == [
        "--reports",
        "reports",
        "--inventory",
        "farm.yaml",
        "--backend",
        "hw",
        "-n",
        "6",
        "--dist",
        "loadgroup",
        "-k",
        "x",
    ]
