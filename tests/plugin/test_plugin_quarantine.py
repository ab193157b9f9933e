"""Retries made visible and the quarantine list, in pytest runs on simulated boards: a pass that
needed a retry is flagged unstable (and stays a pass); a listed test's failure is quarantined (and
does not fail the run) while an unlisted one still fails; an expired or unknown entry is a usage
error; ``--quarantine-verify`` runs only the listed tests and says which now pass."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import npu_hil.harness.farm.quarantine as farm_quarantine

# The first model run of each test raises TransportError (a dropped link), once: the farm's
# retry passes it.
DROPS_ONCE = """
import pytest
import npu_hil.harness.pipeline.run as pipeline
from npu_hil.harness.errors import TransportError

CALLS = []

@pytest.fixture(autouse=True)
def drops_once(monkeypatch, request):
    real = pipeline.run_once

    def run_once(*args, **kwargs):
        CALLS.append(request.node.nodeid)
        if request.node.get_closest_marker("flaky_link") and CALLS.count(request.node.nodeid) == 1:
            raise TransportError("link dropped (stub)")
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "run_once", run_once)
"""

RETRIED = """
import numpy as np
import pytest

X = {"input": np.zeros((1, 3, 2, 2), dtype=np.uint8)}

@pytest.mark.flaky_link
@pytest.mark.soc("rk3588")
def test_wobbly(run_model):
    assert run_model("identity", X).ok

@pytest.mark.soc("rk3588")
def test_steady(run_model):
    assert run_model("identity", X).ok
"""

CASES = """
import numpy as np
import pytest
from npu_hil.harness.plugin import assert_run_ok

X = {"input": np.arange(60, dtype=np.uint8).reshape(1, 3, 4, 5)}

@pytest.mark.soc("rk3588")
def test_known_bad(run_model):
    assert_run_ok(run_model("identity", X, faults=["garbage"]))

@pytest.mark.soc("rk3588")
def test_new_bad(run_model):
    assert_run_ok(run_model("identity", X, faults=["garbage"]))

@pytest.mark.soc("rk3588")
def test_fixed(run_model):
    assert_run_ok(run_model("identity", X))
"""


# "Today" for the whole module, fixed when it is collected, and the plugin is told the same day:
# a run that crosses midnight UTC would otherwise find the entries' dates a day off.
TODAY = datetime.now(timezone.utc).date()
# The same, for a run in a subprocess (a conftest of the project).
PIN_TODAY = f"""
import datetime
import npu_hil.harness.farm.quarantine as quarantine
quarantine.today_utc = lambda: datetime.date.fromisoformat("{TODAY.isoformat()}")
"""


@pytest.fixture(autouse=True)
def today_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(farm_quarantine, "today_utc", lambda: TODAY)


def _day(offset: int) -> str:
    return (TODAY + timedelta(days=offset)).isoformat()


def _quarantine(project: pytest.Pytester, *entries: str) -> Path:
    text = "quarantine:\n" + "".join(entries)
    return project.makefile(".yaml", quarantine=text)


KNOWN_BAD = (
    "  - test: test_quarantine_cases.py::test_known_bad\n"
    "    target: rk3588\n"
    "    reason: off by one row since runtime 2.3\n"
    "    link: https://tracker.example/issues/7\n"
    f"    expires: {_day(30)}\n"
)
FIXED = f"  - {{test: '*::test_fixed', board: rk3588-01, reason: was flaky, expires: {_day(0)}}}\n"


def _run_dir(project: pytest.Pytester) -> Path:
    (run_dir,) = [
        p for p in (project.path / "reports").iterdir() if p.is_dir() and not p.name.startswith(".")
    ]
    return run_dir


def _records(run_dir: Path) -> dict[str, dict[str, Any]]:
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    return {r["nodeid"].split("::")[1]: r for r in map(json.loads, lines)}


def _cases(junit: Path) -> dict[str, ET.Element]:
    root = ET.parse(junit).getroot()
    return {case.get("name", ""): case for case in root.iter("testcase")}


def _props(case: ET.Element) -> dict[str, str]:
    return {p.get("name", ""): p.get("value", "") for p in case.iter("property")}


@pytest.mark.slow
def test_a_pass_after_a_retry_is_unstable_and_still_a_pass(project: pytest.Pytester) -> None:
    project.makeconftest(DROPS_ONCE)
    project.makepyfile(test_quarantine_retried=RETRIED)
    result = project.runpytest(
        "--hil-retries", "1", "--junitxml=pytest-junit.xml", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["*UNSTABLE (passed only on retry): *test_wobbly*: TransportError: link dropped (stub)"]
    )
    assert "UNSTABLE" not in "".join(line for line in result.outlines if "test_steady" in line)

    run_dir = _run_dir(project)
    records = _records(run_dir)
    wobbly, steady = records["test_wobbly[rk3588-01]"], records["test_steady[rk3588-01]"]
    assert wobbly["outcome"] == "passed"
    assert wobbly["unstable"] == "TransportError: link dropped (stub)"
    assert steady["outcome"] == "passed" and steady["unstable"] == ""

    # JUnit (the run's and pytest's own): a pass, the instability a property.
    for junit, prefix in (
        (run_dir / "junit.xml", ""),
        (project.path / "pytest-junit.xml", "npu_hil."),
    ):
        cases = _cases(junit)
        case = cases["test_wobbly[rk3588-01]"]
        assert not [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
        assert _props(case)[prefix + "unstable"] == "TransportError: link dropped (stub)"
        assert prefix + "unstable" not in _props(cases["test_steady[rk3588-01]"])

    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["outcomes"]["passed"] == 2
    assert summary["unstable"]["count"] == 1
    (case,) = summary["unstable"]["cases"]
    assert case["nodeid"].endswith("test_wobbly[rk3588-01]") and case["board"] == "rk3588-01"
    assert case["reason"] == "TransportError: link dropped (stub)" and case["retries"] == 1

    html = (run_dir / "report.html").read_text()
    assert html.count(">UNSTABLE</span>") == 1
    assert "passed only on retry; first failure: TransportError: link dropped (stub)" in html
    assert "1 unstable" in html


# A rerun of the whole test (what pytest-rerunfailures does): the first attempt fails, the second
# passes, the failed attempt's report is logged as "rerun".
RERUN_CONFTEST = """
import pytest
from _pytest.runner import runtestprotocol

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for attempt in range(2):
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        again = attempt == 0 and any(r.failed for r in reports)
        for report in reports:
            if again and report.failed:
                report.outcome = "rerun"
            item.ihook.pytest_runtest_logreport(report=report)
        if not again:
            break
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
"""

RERUN_TESTS = """
import pytest

SEEN = []

@pytest.mark.soc("rk3588")
def test_second_time_lucky(board):
    SEEN.append(1)
    assert len(SEEN) > 1, "first attempt fails"
"""


@pytest.mark.slow
def test_a_pass_on_a_rerun_is_unstable(project: pytest.Pytester) -> None:
    project.makeconftest(RERUN_CONFTEST)
    project.makepyfile(test_quarantine_rerun=RERUN_TESTS)
    result = project.runpytest("-p", "no:randomly")
    assert result.ret == pytest.ExitCode.OK
    run_dir = _run_dir(project)
    summary = json.loads((run_dir / "summary.json").read_text())
    # The report keeps the last attempt: one passed case, flagged with the first one's failure.
    assert summary["total"] == 1 and summary["outcomes"]["passed"] == 1
    (case,) = summary["unstable"]["cases"]
    assert case["reason"].startswith("failed on an earlier attempt: AssertionError: first attempt")
    props = _props(_cases(run_dir / "junit.xml")["test_second_time_lucky[rk3588-01]"])
    assert props["unstable"].startswith("failed on an earlier attempt")


@pytest.mark.slow
def test_quarantine_hides_a_listed_failure_and_not_an_unlisted_one(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_quarantine_cases=CASES)
    _quarantine(project, KNOWN_BAD, FIXED)

    # The listed failure alone: quarantined, and the run passes.
    alone = project.runpytest(
        "--quarantine", "quarantine.yaml", "-k", "known_bad or fixed", "--junitxml=pytest-junit.xml"
    )
    assert alone.ret == pytest.ExitCode.OK, alone.stdout.str()
    outcomes = alone.parseoutcomes()
    assert outcomes.get("quarantined") == 1 and outcomes.get("passed") == 1
    assert "failed" not in outcomes
    alone.stdout.fnmatch_lines(
        ["*quarantined (not failing the run): *test_known_bad[[]rk3588-01[]]: quarantine[[]0[]]*"]
    )
    run_dir = _run_dir(project)
    records = _records(run_dir)
    known = records["test_known_bad[rk3588-01]"]
    assert known["outcome"] == "quarantined"
    assert known["message"] and "assert_run_ok" not in known["message"] and known["longrepr"]
    assert known["quarantine"]["reason"] == "off by one row since runtime 2.3"
    assert known["quarantine"]["link"] == "https://tracker.example/issues/7"
    assert known["quarantine"]["entry"] == "quarantine[0] (quarantine.yaml:2:5)"
    fixed = records["test_fixed[rk3588-01]"]
    assert fixed["outcome"] == "passed" and fixed["quarantine"]["reason"] == "was flaky"

    # JUnit: a skip with the reason (CI stays green), the entry in the properties; both files
    # parse.
    case = _cases(run_dir / "junit.xml")["test_known_bad[rk3588-01]"]
    (skipped,) = case.iter("skipped")
    assert skipped.get("message", "").startswith("quarantined: off by one row since runtime 2.3")
    assert case.find("failure") is None and case.find("error") is None
    assert _props(case)["quarantine.link"] == "https://tracker.example/issues/7"
    suite = ET.parse(run_dir / "junit.xml").getroot()
    assert suite.get("failures") == "0" and suite.get("skipped") == "1"
    theirs = _cases(project.path / "pytest-junit.xml")["test_known_bad[rk3588-01]"]
    assert theirs.find("failure") is None and theirs.find("skipped") is not None
    assert _props(theirs)["npu_hil.quarantine.reason"] == "off by one row since runtime 2.3"

    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["outcomes"]["quarantined"] == 1 and summary["outcomes"]["failed"] == 0
    quarantine = summary["quarantine"]
    assert quarantine["count"] == 1 and quarantine["listed"] == 2
    assert [c["nodeid"].split("::")[1] for c in quarantine["cases"]] == [
        "test_known_bad[rk3588-01]",
        "test_fixed[rk3588-01]",
    ]
    html = (run_dir / "report.html").read_text()
    assert html.count(">QUARANTINED</span>") == 2
    assert 'href="https://tracker.example/issues/7"' in html and "1 quarantined" in html

    # With the unlisted failure in the run, the run fails on it (and only on it).
    everything = project.runpytest("--quarantine", "quarantine.yaml")
    assert everything.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = everything.parseoutcomes()
    assert outcomes.get("failed") == 1 and outcomes.get("quarantined") == 1
    everything.stdout.fnmatch_lines(["FAILED *test_new_bad[[]rk3588-01[]]*"])
    assert not any("FAILED" in line and "known_bad" in line for line in everything.outlines)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (
            (KNOWN_BAD, FIXED.replace(_day(0), _day(-1))),
            f"quarantine[1] (quarantine.yaml:7:5), test '*::test_fixed': expired on {_day(-1)} "
            f"(today is {_day(0)}, UTC)",
        ),
        (
            (KNOWN_BAD, f"  - {{test: '*::test_gone', reason: r, expires: {_day(1)}}}\n"),
            "quarantine[1] (quarantine.yaml:7:5), test '*::test_gone': matches none of the 3 "
            "collected tests",
        ),
        (  # the test exists, but not on that board
            (KNOWN_BAD, FIXED.replace("rk3588-01", "kl730-01")),
            "quarantine[1] (quarantine.yaml:7:5), test '*::test_fixed' on board 'kl730-01': "
            "matches none of the 3 collected tests",
        ),
        (
            ("  - {test: x, reason: r, expires: tomorrow}\n",),
            "quarantine.yaml:2:35: quarantine[0].expires: expected a date YYYY-MM-DD",
        ),
        (  # a pattern that hides the whole run's failures
            (f"  - {{test: '*', reason: r, expires: {_day(1)}}}\n",),
            "quarantine[0] (quarantine.yaml:2:5), test '*': matches 3 of the 3 collected tests "
            "(more than half: it would hide the run's failures",
        ),
        (  # or most of them
            (f"  - {{test: '*::test_*_bad', reason: r, expires: {_day(1)}}}\n",),
            "test '*::test_*_bad': matches 2 of the 3 collected tests (more than half",
        ),
    ],
    ids=["expired", "unknown", "other-board", "bad-date", "every-test", "most-tests"],
)
def test_expired_unknown_and_bad_entries_are_usage_errors(
    project: pytest.Pytester, entries: tuple[str, ...], expected: str
) -> None:
    project.makepyfile(test_quarantine_cases=CASES)
    _quarantine(project, *entries)
    # -k does not hide an entry: the whole collected suite is what it must match.
    result = project.runpytest("--quarantine", "quarantine.yaml", "-k", "known_bad")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and expected in errors[0], result.errlines
    assert not (project.path / "reports").exists() or not any(
        p.is_dir() and not p.name.startswith(".") for p in (project.path / "reports").iterdir()
    )


@pytest.mark.slow
def test_verify_runs_only_the_listed_tests_and_names_those_that_pass(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_quarantine_cases=CASES)
    _quarantine(project, KNOWN_BAD, FIXED)
    result = project.runpytest("--quarantine", "quarantine.yaml", "--quarantine-verify")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 1 and outcomes.get("quarantined") == 1
    assert outcomes.get("deselected") == 1 and "failed" not in outcomes
    result.stdout.fnmatch_lines(
        [
            "*quarantine verify: 1 of 2 listed tests pass",
            "*now passes, its entry can go: *test_fixed[[]rk3588-01[]]: quarantine[[]1[]]"
            " (quarantine.yaml:7:5)*",
        ]
    )
    summary = json.loads((_run_dir(project) / "summary.json").read_text())
    assert summary["total"] == 2
    assert [n.split("::")[1] for n in summary["quarantine"]["now_passing"]] == [
        "test_fixed[rk3588-01]"
    ]


def test_a_quarantine_path_that_is_no_regular_file_is_refused_not_waited_on(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_quarantine_cases=CASES)
    os.mkfifo(project.path / "quarantine.yaml")  # no writer: reading it would wait for ever
    result = project.runpytest("--quarantine", "quarantine.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and "--quarantine quarantine.yaml: cannot read the file" in errors[0]
    assert "a quarantine file (YAML)" in errors[0], errors


def test_verify_needs_the_list(project: pytest.Pytester) -> None:
    project.makepyfile(test_quarantine_cases=CASES)
    result = project.runpytest("--quarantine-verify")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any("--quarantine-verify needs the list" in line for line in result.errlines)


@pytest.mark.slow
def test_under_xdist_the_list_holds_and_an_unknown_entry_stops_the_run(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_quarantine_cases=CASES)
    project.makeconftest(PIN_TODAY)
    _quarantine(project, KNOWN_BAD, FIXED)
    args = ("-n", "2", "-p", "xdist", "-p", "no:cacheprovider", "--quarantine", "quarantine.yaml")
    result = project.runpytest_subprocess(*args, "-k", "not new_bad")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes.get("quarantined") == 1 and outcomes.get("passed") == 1
    result.stdout.fnmatch_lines(["*quarantined (not failing the run): *test_known_bad*"])
    records = _records(_run_dir(project))
    assert records["test_known_bad[rk3588-01]"]["outcome"] == "quarantined"

    # A worker cannot raise a usage error; its collection error stops the run with the message.
    _quarantine(
        project, KNOWN_BAD, f"  - {{test: '*::test_gone', reason: r, expires: {_day(1)}}}\n"
    )
    stopped = project.runpytest_subprocess(*args)
    assert stopped.ret != pytest.ExitCode.OK
    stopped.stdout.fnmatch_lines(["*quarantine[[]1[]] *test_gone*: matches none of the 3*"])
    assert "passed" not in stopped.parseoutcomes() and "INTERNALERROR" not in stopped.stdout.str()
