"""Outcomes follow the error type: infrastructure trouble (a TransportError, a timeout, an unhealthy
board) is an *error* with its message as the whole explanation, a buffer mismatch a failure
(docs/model-developer/tests.md#outcomes). :func:`phase_outcome` is how a phase counts, for the
records; the hooks here only present it (the terminal's status, JUnit XML's phase)."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

INFRA_ATTR = "npu_hil_infra"
QUARANTINED_ATTR = "npu_hil_quarantined"
"""Set on a call report whose failure a quarantine entry covers
(``npu_hil.harness.plugin.quarantine``)."""
HARNESS_ROOT = Path(__file__).resolve().parents[1]  # npu_hil/harness/, above this package


def is_infra(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    """Whether the error is infrastructure trouble: a TransportError, a timeout, an unhealthy
    board."""
    if excinfo is None:
        return False
    from npu_hil.harness.errors import TransportError
    from npu_hil.harness.farm.recovery import BoardUnhealthyError

    return excinfo.errisinstance((TransportError, TimeoutError, BoardUnhealthyError))


def phase_outcome(call: pytest.CallInfo[None], report: pytest.TestReport) -> str:
    """How one phase of a test counts: ``passed``, ``skipped``, ``failed`` (the test's call
    failed), ``quarantined`` (it failed, and a quarantine entry lists it) or ``error`` (setup or
    teardown failed, or infrastructure under any phase did)."""
    if getattr(report, QUARANTINED_ATTR, None):
        return "quarantined"
    if not report.failed:
        return str(report.outcome)
    if call.when == "call" and not is_infra(call.excinfo):
        return "failed"
    return "error"


def _is_harness_refusal(excinfo: pytest.ExceptionInfo[BaseException]) -> bool:
    """A typed harness error that is not infrastructure, raised from inside the harness (a test
    that raises one itself keeps its traceback)."""
    from npu_hil.harness.errors import NpuHilError

    if not excinfo.errisinstance(NpuHilError) or is_infra(excinfo):
        return False
    last = excinfo.traceback[-1] if excinfo.traceback else None
    return last is not None and HARNESS_ROOT in Path(str(last.path)).resolve().parents


def _test_line(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """``test_file.py:12: `` for the test's own frame that led to the error, where there is one."""
    path = getattr(item, "path", None)
    for entry in reversed(excinfo.traceback):
        if path is not None and Path(str(entry.path)) == Path(path):
            return f"{Path(path).name}:{entry.lineno + 1}: "
    return ""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    excinfo = call.excinfo
    if not report.failed or excinfo is None:
        return report
    if _is_harness_refusal(excinfo):
        # A typed refusal (LayoutError, DeviceError, ...) says all it has to say in its
        # message: one line with where the test asked for it, not a traceback into the harness.
        where = _test_line(item, excinfo)
    elif is_infra(excinfo):
        where = ""
        setattr(report, INFRA_ATTR, True)
        if report.when == "call":
            # JUnit XML calls a failed non-call phase an error; the test itself did not fail,
            # the infrastructure under it did. Presentation only: records read phase_outcome.
            report.when = "setup"
    else:
        return report
    exc = excinfo.value
    report.longrepr = f"{where}{type(exc).__name__}: {getattr(exc, 'message', None) or exc}"
    return report


def pytest_report_teststatus(report: pytest.TestReport) -> tuple[str, str, str] | None:
    if getattr(report, INFRA_ATTR, False) and report.failed:
        return "error", "E", "ERROR"
    return None
