"""The assertion users write after a model run (no hooks here: importing it is free)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from npu_hil.harness.pipeline import ModelRun


def assert_run_ok(result: ModelRun) -> None:
    """Fail the test with the run's diff summary unless every buffer matched (and every output
    met the accuracy thresholds the test or the manifest set)."""
    __tracebackhide__ = True
    if not result.ok:
        pytest.fail(result.summary(), pytrace=False)
