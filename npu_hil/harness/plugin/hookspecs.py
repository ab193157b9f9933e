"""The plugin's own hooks: what a feature may add to the run's report without the records
feature knowing the feature (records read none of them)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from npu_hil.harness.history.trends import TrendsView
    from npu_hil.harness.report.records import TestRecord
    from npu_hil.harness.report.runmeta import RunMeta
    from npu_hil.harness.report.summary import RunHistory


@pytest.hookspec(firstresult=True)
def pytest_npu_hil_run_end(
    config: pytest.Config, run_dir: Path, records: list[TestRecord], meta: RunMeta
) -> RunHistory | None:
    """Controller, end of the session, after the run's meta is known (``meta["complete"]``) and
    before its report is written: keep what the run measured; the result is summary.json's
    ``history`` (the first one given)."""


@pytest.hookspec
def pytest_npu_hil_record_kept(config: pytest.Config, record: TestRecord) -> None:
    """Controller, as each case's record is appended to the run (its last attempt's record
    comes last): work on it now rather than at the end of the session."""


@pytest.hookspec(firstresult=True)
def pytest_npu_hil_run_trends(config: pytest.Config) -> TrendsView | None:
    """Controller, end of the session, after :func:`pytest_npu_hil_run_end`: the report page's
    view of this run among the earlier ones (plain data), or None."""
