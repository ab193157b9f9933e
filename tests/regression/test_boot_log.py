"""A board that reboots under a test: the serial console's boot log reaches the test's record,
and the board's next test runs on the fresh shell."""

from __future__ import annotations

import json

import pytest
from simfarm_checks import require_link

from npu_hil.harness.report.runs import RUN_ID_PATTERN

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

TESTS = """
import numpy as np
import pytest

from npu_hil.harness.errors import TransportError

@pytest.mark.soc("rk3588")
def test_1_the_board_reboots(board):
    # The console's shell dies; the fake board prints a boot log and starts a fresh one.
    with pytest.raises(TransportError, match="boot log kept"):
        board.transport.run(["sh", "-c", "kill -KILL $PPID"], timeout=30)

@pytest.mark.soc("rk3588")
def test_2_the_next_test_runs(board, run_model):
    x = np.arange(3 * 4 * 4, dtype=np.int8).reshape(1, 3, 4, 4)
    assert run_model("conv3x3", {"input": x}).ok
"""


def test_a_reboot_puts_the_boot_log_in_the_report(pytester: pytest.Pytester) -> None:
    require_link("serial")
    pytester.makepyfile(TESTS)
    result = pytester.runpytest_subprocess(
        "--simfarm", "serial", "--target", "rk3588", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2)
    (run,) = [p for p in (pytester.path / "reports").iterdir() if RUN_ID_PATTERN.match(p.name)]
    records = {
        json.loads(line)["nodeid"].split("::")[1].split("[")[0]: json.loads(line)
        for line in (run / "records.jsonl").read_text().splitlines()
    }
    rebooted = records["test_1_the_board_reboots"]
    assert "Booting Linux on physical CPU" in rebooted["boot_log"]
    assert records["test_2_the_next_test_runs"]["boot_log"] == ""
    junit = (run / "junit.xml").read_text()
    assert "Booting Linux on physical CPU" in junit
