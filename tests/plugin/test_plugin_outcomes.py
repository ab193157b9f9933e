"""Outcomes follow the error type: a buffer mismatch fails, infrastructure trouble errors."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

MISMATCH = """
import numpy as np
import pytest
from npu_hil.harness.plugin import assert_run_ok

@pytest.mark.soc("rk3588")
def test_garbage(run_model):
    x = np.arange(1 * 3 * 4 * 5, dtype=np.uint8).reshape(1, 3, 4, 5)
    assert_run_ok(run_model("identity", {"input": x}, faults=["garbage"]))

@pytest.mark.soc("rk3588")
def test_clean(run_model):
    x = np.arange(1 * 3 * 4 * 5, dtype=np.uint8).reshape(1, 3, 4, 5)
    result = run_model("identity", {"input": x})
    assert result.ok, result.summary()
"""

# Stubs one attempt of the pipeline inside the test project only: the first ``FAILS`` attempts
# raise TransportError (the retries around them are the farm's policy, as configured by pytest).
FLAKY_CONFTEST = """
import pytest
import npu_hil.harness.pipeline.run as pipeline
from npu_hil.harness.errors import TransportError

CALLS = []

@pytest.fixture(autouse=True)
def flaky(monkeypatch, request):
    fails = request.node.get_closest_marker("layout").args[0]
    real = pipeline.run_once

    def run_once(*args, **kwargs):
        CALLS.append(request.node.nodeid)
        if CALLS.count(request.node.nodeid) <= fails:
            raise TransportError("connection lost (stub)")
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "run_once", run_once)
"""

FLAKY_TESTS = """
import numpy as np
import pytest

X = {"input": np.zeros((1, 3, 2, 2), dtype=np.uint8)}

@pytest.mark.layout(1)
@pytest.mark.soc("rk3588")
def test_recovers(run_model):
    assert run_model("identity", X).ok

@pytest.mark.layout(5)
@pytest.mark.soc("rk3588")
def test_gives_up(run_model):
    run_model("identity", X)
"""


def test_mismatch_fails_with_the_diff_summary(project: pytest.Pytester) -> None:
    project.makepyfile(MISMATCH)
    result = project.runpytest("--junitxml=junit.xml")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*rk3588 NC1HWC2 (output) [[]1, 3, 4, 5[]] int8: different",
            "*elements differ*",
            "*identity on rk3588-01 (rk3588, simulated): FAILED",
        ]
    )
    # assert_run_ok hides its own frame: the failure points at the test, not the harness.
    assert "__tracebackhide__" not in result.stdout.str()
    root = ET.parse(project.path / "junit.xml")
    case = root.find(".//testcase[@name='test_garbage[rk3588-01]']")
    assert case is not None and case.find("failure") is not None


def test_transport_error_is_retried_then_an_error(project: pytest.Pytester) -> None:
    project.makeconftest(FLAKY_CONFTEST)
    project.makepyfile(FLAKY_TESTS)
    result = project.runpytest("--hil-retries", "2", "--junitxml=junit.xml")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*TransportError: connection lost (stub)*"])
    root = ET.parse(project.path / "junit.xml")
    gave_up = root.find(".//testcase[@name='test_gives_up[rk3588-01]']")
    assert gave_up is not None
    assert gave_up.find("error") is not None and gave_up.find("failure") is None
    recovered = root.find(".//testcase[@name='test_recovers[rk3588-01]']")
    assert recovered is not None
    props = {p.get("name"): p.get("value") for p in recovered.iter("property")}
    assert props["npu_hil.retries"] == "1"


def test_no_retries_when_told(project: pytest.Pytester) -> None:
    project.makeconftest(FLAKY_CONFTEST)
    project.makepyfile(FLAKY_TESTS)
    result = project.runpytest("--hil-retries", "0")
    result.assert_outcomes(errors=2)


def test_unhealthy_board_errors_and_the_others_go_on(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        inventory="""\
boards:
  - {name: rk3588-01, target: rk3588, backend: sim, transport: local}
  - name: rk3588-02
    target: rk3588
    backend: hw
    fallback: none
    transport: {kind: ssh, host: 127.0.0.1, port: 2222}
    power: {command: {cycle: [true]}}
""",
    )
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.soc("rk3588")
        @pytest.mark.parametrize("n", [1, 2])
        def test_on_board(board, n):
            pass
        """
    )
    result = pytester.runpytest("-rE")
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(
        ["*board rk3588-02 is unhealthy: TransportError: *still unhealthy after a power cycle*"]
    )
    # the report: the hardware board never ran a case, and says why in its health section
    (run_dir,) = [p for p in (pytester.path / "reports").iterdir() if p.is_dir()]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["hardware"], summary["simulated"], summary["not_run"]) == (0, 2, 2)
    assert summary["per_board"]["rk3588-02"]["kind"] == "-"
    (event,) = summary["board_health"]["rk3588-02"]
    assert event["event"].startswith("unreachable: board rk3588-02 is unhealthy")
    assert "still unhealthy after a power cycle" in event["event"] and event["cases"] == 2
    html = (run_dir / "report.html").read_text()
    health = html[html.index('id="health"') : html.index('id="compare"')]
    assert "rk3588-02" in health and "still unhealthy after a power cycle" in health


def test_a_hung_board_times_out_as_an_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        inventory="""\
boards:
  - {name: rk3588-01, target: rk3588, backend: sim, transport: local, timeouts: {run: 1}}
""",
    )
    pytester.makepyfile(
        """
        import numpy as np
        import pytest

        @pytest.mark.soc("rk3588")
        def test_hang(run_model):
            x = {"input": np.zeros((1, 3, 2, 2), np.uint8)}
            run_model("identity", x, faults=[{"name": "hang", "seconds": 30}])
        """
    )
    result = pytester.runpytest("--hil-retries", "0")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*TransportError*"])


REFUSED = """
import numpy as np
import pytest

@pytest.mark.soc("kl730")
def test_uint8_on_kl730(run_model):
    run_model("conv3x3", {"input": np.zeros((1, 3, 4, 5), np.uint8)})

@pytest.mark.soc("kl730")
def test_own_error(run_model):
    from npu_hil.harness.errors import LayoutError
    raise LayoutError("raised by the test itself")
"""


def test_a_harness_refusal_is_one_line_with_the_tests_own_line(project: pytest.Pytester) -> None:
    project.makepyfile(test_refused=REFUSED)
    result = project.runpytest()
    result.assert_outcomes(failed=2)
    text = result.stdout.str()
    result.stdout.fnmatch_lines(
        ["test_refused.py:6: LayoutError: job kl730-01-conv3x3-*KL730 NPU data is signed*uint8"]
    )
    # No traceback into the harness for its own typed refusal ...
    assert "raise_for_errors" not in text
    # ... but a test that raises one itself keeps its traceback.
    assert 'raise LayoutError("raised by the test itself")' in text
