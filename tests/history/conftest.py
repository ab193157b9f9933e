"""pytester projects for the baseline's plugin tests: one simulated board."""

from __future__ import annotations

import textwrap

# Imported before pytester's first snapshot of sys.modules (see tests/plugin/conftest.py: a C
# extension imported inside one in-process run and again in the next aborts the interpreter).
import onnxruntime  # noqa: F401
import pytest

import npu_hil.harness.farm.farm
import npu_hil.harness.pipeline
import npu_hil.harness.report.writer
import npu_hil.harness.sim  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    """Enable pytest's ``pytester`` plugin for these tests (as tests/plugin/conftest.py does)."""
    if config.pluginmanager.has_plugin("pytester"):
        return
    config.option.runpytest = getattr(config.option, "runpytest", "inprocess")
    config.option.lsof = getattr(config.option, "lsof", False)
    config.pluginmanager.import_plugin("pytester")


INVENTORY = """\
defaults:
  backend: sim
  fallback: sim
boards:
  - {name: rk3588-01, target: rk3588, backend: sim, transport: local}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", inventory=INVENTORY)
    pytester.makeini(
        textwrap.dedent(
            """\
            [pytest]
            npu_hil_retry_backoff = 0.01
            """
        )
    )
    return pytester
