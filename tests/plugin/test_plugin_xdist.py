"""pytest-xdist: two workers, one board: the board's lock keeps them from overlapping, and every
worker's records reach the controller's report."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

pytest.importorskip("xdist")

TESTS = """
import json
import os
import time

import pytest

@pytest.mark.soc("rk3588")
@pytest.mark.parametrize("n", range(6))
def test_hold_board(board, n):
    start = time.time()
    time.sleep(0.2)
    end = time.time()
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    line = json.dumps({"n": n, "worker": worker, "start": start, "end": end})
    with open("intervals.jsonl", "a") as f:
        f.write(line + "\\n")
"""


def test_two_workers_never_hold_one_board_at_once(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest_subprocess("-n", "2", "-p", "xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)
    intervals = [
        json.loads(line) for line in (project.path / "intervals.jsonl").read_text().splitlines()
    ]
    assert len({i["worker"] for i in intervals}) == 2, "both workers must have run tests"
    ordered = sorted(intervals, key=lambda i: i["start"])
    for before, after in itertools.pairwise(ordered):
        assert before["end"] <= after["start"], (before, after)
    runs = [
        p for p in (project.path / "reports").iterdir() if p.is_dir() and not p.name.startswith(".")
    ]
    assert len(runs) == 1
    records = (runs[0] / "records.jsonl").read_text().splitlines()
    assert len(records) == 6
    assert all(json.loads(r)["board"] == "rk3588-01" for r in records)


AFFINITY_INVENTORY = """\
boards:
  - {name: rk3588-01, target: rk3588, backend: sim, transport: local}
  - {name: rk3588-02, target: rk3588, backend: sim, transport: local}
  - {name: rk3566-01, target: rk3566, backend: sim, transport: local}
  - {name: kl730-01,  target: kl730,  backend: sim, transport: local}
"""
AFFINITY_TESTS = """
import json
import os

import pytest

@pytest.mark.vendor("rockchip", "kneron")
@pytest.mark.parametrize("n", range(5))
def test_case(board, n):
    line = json.dumps({"board": board.name, "worker": os.environ["PYTEST_XDIST_WORKER"]})
    with open("placements.jsonl", "a") as f:
        f.write(line + "\\n")

@pytest.mark.parametrize("k", range(4))
def test_no_board(k):
    pass
"""


@pytest.mark.parametrize("dist", ["loadgroup"])
def test_every_board_runs_on_one_worker(project: pytest.Pytester, dist: str) -> None:
    """Under --dist loadgroup (what ``npu-hil nightly -n`` passes) each board's cases run on
    one worker, read from the workers' own placements; cases of no board are spread."""
    project.makefile(".yaml", inventory=AFFINITY_INVENTORY)
    project.makepyfile(AFFINITY_TESTS)
    result = project.runpytest_subprocess(
        "-n", "2", "--dist", dist, "-p", "xdist", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=24)
    placements = [
        json.loads(line) for line in (project.path / "placements.jsonl").read_text().splitlines()
    ]
    workers: dict[str, set[str]] = {}
    for placed in placements:
        workers.setdefault(placed["board"], set()).add(placed["worker"])
    assert sorted(workers) == ["kl730-01", "rk3566-01", "rk3588-01", "rk3588-02"]
    assert all(len(w) == 1 for w in workers.values()), workers
    assert len(set().union(*workers.values())) == 2, "both workers must have had boards"


def test_infrastructure_error_is_an_error_under_xdist(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import pytest
        from npu_hil.harness.errors import TransportError

        @pytest.mark.soc("rk3588")
        def test_link_cut(board):
            raise TransportError("link cut")
        """
    )
    result = project.runpytest_subprocess("-n", "2", "-p", "xdist")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*TransportError: link cut*"])


def test_worker_heatmaps_land_in_the_run_folder_the_message_names(
    project: pytest.Pytester,
) -> None:
    """Workers learn the run id from the controller: their heatmaps go straight into the one
    run folder, where the failure message says they are, and stay there after the run."""
    project.makepyfile(
        """
        import numpy as np
        import pytest
        from npu_hil.harness.plugin import assert_run_ok

        X = {"input": np.arange(60, dtype=np.uint8).reshape(1, 3, 4, 5)}

        @pytest.mark.soc("rk3588", "rk3566")
        @pytest.mark.parametrize("n", range(2))
        def test_bad(run_model, n):
            assert_run_ok(run_model("identity", X, faults=["dirty-padding"]))
        """
    )
    result = project.runpytest_subprocess("-n", "2", "-p", "xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=4)
    (run_dir,) = [p for p in (project.path / "reports").iterdir() if p.is_dir()]
    named = set(re.findall(r"heatmap: (\S+\.png)", result.stdout.str()))
    assert named, result.stdout.str()[-2000:]
    for path in named:
        assert Path(path).is_file() and Path(path).parent == run_dir / "heatmaps", path
    records = [json.loads(r) for r in (run_dir / "records.jsonl").read_text().splitlines()]
    files = {t["heatmap"] for r in records for t in r["tensors"] if t["heatmap"]}
    assert files and all((run_dir / f).is_file() for f in files)
    assert {f"heatmaps/{Path(p).name}" for p in named} <= files


FREEZE_CONFTEST = """
import atexit
import gc

def pytest_configure(config):
    # Not the environment: this run's controller may itself run inside an xdist worker.
    who = config.workerinput["workerid"] if hasattr(config, "workerinput") else "controller"

    def say():
        with open(f"frozen-{who}.txt", "w") as f:
            f.write(str(gc.get_freeze_count()))

    atexit.register(say)
"""


def test_a_worker_freezes_its_heap_as_it_ends_and_the_controller_does_not(
    project: pytest.Pytester,
) -> None:
    # A worker only exits after its session: its last garbage collections (pytest's at
    # unconfigure, the interpreter's at exit) would walk every report and item it holds.
    project.makepyfile(TESTS)
    project.makeconftest(FREEZE_CONFTEST)
    result = project.runpytest_subprocess("-n", "2", "-p", "xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)
    for worker in ("gw0", "gw1"):
        assert int((project.path / f"frozen-{worker}.txt").read_text()) > 10_000
    assert int((project.path / "frozen-controller.txt").read_text()) == 0


def test_without_workers_a_boards_cases_run_together(project: pytest.Pytester) -> None:
    """One process, every board: each board's cases one after another, in the order the boards
    first appear; cases of no board keep their places (before: test by test, board after
    board, which closed and restarted agents once more boards than the live-agent cap)."""
    project.makefile(".yaml", inventory=AFFINITY_INVENTORY)
    project.makepyfile(
        AFFINITY_TESTS.replace('os.environ["PYTEST_XDIST_WORKER"]', "n")
        + "\n@pytest.mark.vendor('rockchip')\ndef test_later(board):\n"
        "    open('placements.jsonl', 'a').write(json.dumps({'board': board.name}) + '\\n')\n"
    )
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-v")
    result.assert_outcomes(passed=27)
    boards = [
        json.loads(line)["board"]
        for line in (project.path / "placements.jsonl").read_text().splitlines()
    ]
    runs = [name for name, _ in itertools.groupby(boards)]
    assert runs == ["rk3588-01", "rk3588-02", "rk3566-01", "kl730-01"], boards
    assert boards.count("rk3588-01") == 6 and boards.count("kl730-01") == 5
    order = [line.split("::")[1].split()[0] for line in result.outlines if " PASSED" in line]
    assert order[-4:] == [f"test_no_board[{k}]" for k in range(4)], order


def test_the_nightlys_own_pytest_freezes_as_it_ends(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pytest process npu-hil nightly starts names its run folder in the environment and
    # exits with its session: its heap is frozen too (a plain run's controller is not, above).
    project.makepyfile(TESTS)
    project.makeconftest(FREEZE_CONFTEST)
    run_dir = project.path / "reports" / "20261201T000000Z-abcdef"
    monkeypatch.setenv("NPU_HIL_RUN_DIR", str(run_dir))
    result = project.runpytest_subprocess("-p", "no:xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)
    assert int((project.path / "frozen-controller.txt").read_text()) > 10_000
    assert (run_dir / "summary.json").exists()
