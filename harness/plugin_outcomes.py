"""Outcomes follow the error type: infrastructure trouble is an *error*, not a test failure.

A :class:`~harness.errors.TransportError` (connection lost, checksum mismatch, a board that does
not answer in time), a :class:`TimeoutError` or an unhealthy board is reported as an error of the
test — counted with errors in the terminal, ``<error>`` in JUnit XML — with its message as the
whole explanation (no traceback into the harness). A buffer mismatch stays a failure.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from harness.errors import TransportError
from harness.plugin_farm import BoardUnhealthyError

INFRA_ERRORS: tuple[type[BaseException], ...] = (
    TransportError,
    TimeoutError,
    BoardUnhealthyError,
)
INFRA_ATTR = "npu_hil_infra"


def is_infra(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    return excinfo is not None and excinfo.errisinstance(INFRA_ERRORS)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and is_infra(call.excinfo):
        assert call.excinfo is not None
        exc = call.excinfo.value
        message = getattr(exc, "message", None) or str(exc)
        report.longrepr = f"{type(exc).__name__}: {message}"
        setattr(report, INFRA_ATTR, True)
        if report.when == "call":
            # JUnit XML and the terminal call a failed non-call phase an error; the test itself
            # did not fail, the infrastructure under it did.
            report.when = "setup"
    return report


def pytest_report_teststatus(report: pytest.TestReport) -> tuple[str, str, str] | None:
    if getattr(report, INFRA_ATTR, False) and report.failed:
        return "error", "E", "ERROR"
    return None
