"""In pytest: a board whose agent keeps getting killed errors (never fails), its retried errors
are in the records and the report, and once its circuit breaker opens its remaining tests error
at once with the cause while the other board's pass."""

from __future__ import annotations

import json

import pytest

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

INVENTORY = """\
boards:
  - {name: bad-01, target: rk3588, backend: sim, transport: local}
  - {name: good-01, target: rk3588, backend: sim, transport: local}
"""

TESTS = """
import numpy as np
import pytest

X = {"input": np.zeros((1, 3, 2, 2), dtype=np.uint8)}

@pytest.mark.soc("rk3588")
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_case(board, run_model, n):
    faults = [{"name": "crash", "signal": "SIGKILL"}] if board.name == "bad-01" else None
    assert run_model("identity", X, faults=faults).ok
"""


def _records(project: pytest.Pytester) -> dict[str, dict[str, object]]:
    (run_dir,) = [
        p for p in (project.path / "reports").iterdir() if p.is_dir() and not p.name.startswith(".")
    ]
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    return {r["nodeid"].split("::")[1]: r for r in map(json.loads, lines)}


def test_killed_agents_trip_the_breaker_and_are_errors(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", inventory=INVENTORY)
    pytester.makeini("[pytest]\nnpu_hil_retry_backoff = 0.01\n")
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("--hil-retries", "1", "--hil-breaker", "3", "-p", "no:randomly")
    # A killed agent is infrastructure: errors, not failures; the good board is unaffected.
    result.assert_outcomes(passed=4, errors=4)
    text = result.stdout.str()
    assert "SIGHUP" not in text
    result.stdout.fnmatch_lines(["*AgentKilledError*killed by SIGKILL*"])
    result.stdout.fnmatch_lines(["*BoardBrokenError: board bad-01 is marked unhealthy*"])

    records = _records(pytester)
    first, second = records["test_case[bad-01-1]"], records["test_case[bad-01-2]"]
    # The first case paid its retry; what the retry was paid for is in the record.
    assert first["outcome"] == "error"
    assert len(first["retried"]) == 1 and "killed by SIGKILL" in first["retried"][0]
    assert first["retried"][0].startswith("AgentKilledError: ")
    # The second case's first failure was the third in a row: no retry, the breaker opened.
    assert second["outcome"] == "error" and second["retried"] == []
    assert "failed 3 times in a row" in second["message"]
    for n in (3, 4):  # errored at once, the cause named, no agent started
        later = records[f"test_case[bad-01-{n}]"]
        assert later["outcome"] == "error" and later["retried"] == []
        assert "circuit breaker" in later["message"] and "SIGKILL" in later["message"]
        assert later["duration_s"] < 1.0
        assert any(e.startswith("circuit breaker open: ") for e in later["board_events"])
    assert all(records[f"test_case[good-01-{n}]"]["outcome"] == "passed" for n in range(1, 5))

    (run_dir,) = [
        p
        for p in (pytester.path / "reports").iterdir()
        if p.is_dir() and not p.name.startswith(".")
    ]
    summary = json.loads((run_dir / "summary.json").read_text())
    events = {e["event"]: e["cases"] for e in summary["board_health"]["bad-01"]}
    assert [n for e, n in events.items() if e.startswith("circuit breaker open")] == [3]
    assert any(e.startswith("model run retried after AgentKilledError") for e in events)
    assert "good-01" not in summary["board_health"]
    html = (run_dir / "report.html").read_text()
    assert "retried 1x after" in html and "circuit breaker open" in html
    assert html.count("killed by SIGKILL") >= 2


def test_a_retried_pass_keeps_what_was_retried(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", inventory=INVENTORY)
    pytester.makeini("[pytest]\nnpu_hil_retry_backoff = 0.01\n")
    # The agent is killed under the first attempt only (a second into its 5 s hang, or before
    # the hang began): the retry, which hangs as long, passes.
    pytester.makepyfile(
        """
        import os, signal, threading
        import numpy as np
        import pytest

        X = {"input": np.zeros((1, 3, 2, 2), dtype=np.uint8)}

        @pytest.mark.soc("rk3588")
        def test_flaky(board, run_model):
            if board.name != "bad-01":
                pytest.skip("one board is enough")
            board.client.ping()
            pid = board.client.agent_pid
            threading.Timer(1.0, os.kill, (pid, signal.SIGKILL)).start()
            result = run_model("identity", X, faults=[{"name": "hang", "seconds": 5}])
            assert result.ok
        """
    )
    result = pytester.runpytest("--hil-retries", "1")
    result.assert_outcomes(passed=1, skipped=1)
    record = _records(pytester)["test_flaky[bad-01]"]
    assert record["outcome"] == "passed"
    assert len(record["retried"]) == 1 and "killed by SIGKILL" in record["retried"][0]
    (run_dir,) = [
        p
        for p in (pytester.path / "reports").iterdir()
        if p.is_dir() and not p.name.startswith(".")
    ]
    html = (run_dir / "report.html").read_text()
    assert "retried 1x after" in html and "killed by SIGKILL" in html


XDIST_TESTS = """
import os
import numpy as np
import pytest

X = {"input": np.zeros((1, 3, 2, 2), dtype=np.uint8)}

@pytest.mark.soc("rk3588")
@pytest.mark.parametrize("n", range(5))
def test_case(board, run_model, n):
    with open("bodies.txt", "a") as bodies:  # a case that got past the breaker at setup
        bodies.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
    assert run_model("identity", X, faults=[{"name": "crash", "signal": "SIGKILL"}]).ok
"""


def test_a_board_tripped_in_one_worker_is_open_in_the_other(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makefile(
        ".yaml",
        inventory="boards:\n  - {name: bad-01, target: rk3588, backend: sim, transport: local}\n",
    )
    pytester.makeini("[pytest]\nnpu_hil_retry_backoff = 0.01\n")
    # Two files, one per worker (--dist loadfile): each worker has five cases on the board.
    pytester.makepyfile(test_one=XDIST_TESTS, test_two=XDIST_TESTS)
    result = pytester.runpytest_subprocess(
        "-n",
        "2",
        "-p",
        "xdist",
        "--dist",
        "loadfile",
        "-p",
        "no:randomly",
        "--hil-retries",
        "0",
        "--hil-breaker",
        "3",
    )
    result.assert_outcomes(errors=10)
    # Three failures in a row, counted across the workers, open the board's breaker for both:
    # the other cases error at setup. Each worker counting alone would pay 3 each (6).
    bodies = (pytester.path / "bodies.txt").read_text().split()
    assert len(bodies) <= 4, bodies
    records = (p for p in (pytester.path / "reports").iterdir() if p.is_dir())
    (run_dir,) = [p for p in records if not p.name.startswith(".")]
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    files = {json.loads(line)["nodeid"].split("::")[0] for line in lines}
    assert files == {"test_one.py", "test_two.py"}  # both workers' cases are in the report
    refused = [json.loads(line) for line in lines if "circuit breaker" in line]
    assert len(refused) >= 6
