"""The npu-hil pytest plugin (entry point ``pytest11``; docs/model-developer/tests.md).

Inert until a test asks for a board: it registers its options, markers and fixtures and nothing
else. One feature per module, registered in the order of :data:`FEATURES`."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from npu_hil.harness.pipeline import ModelRun

__all__ = ["assert_run_ok"]

FEATURES = (
    # Dependencies first: a plugin module imported before pytest registers it escapes assertion
    # rewriting and warns. Each feature adds its options to the group in this order.
    "npu_hil.harness.plugin.inventory",
    "npu_hil.harness.plugin.outcomes",
    "npu_hil.harness.plugin.records",
    "npu_hil.harness.plugin.farm",
    # Reads the farm's board names: the xdist scheduler that keeps a board on one worker.
    "npu_hil.harness.plugin.affinity",
    # After the farm (it reads a case's board) and before the features whose reports it turns
    # into quarantined ones.
    "npu_hil.harness.plugin.quarantine",
    "npu_hil.harness.plugin.history",
    "npu_hil.harness.plugin.run",
    "npu_hil.harness.plugin.simfarm",
)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    # The group's title first, then the features, each registered here and adding its options
    # as it registers. Not `pytest_plugins`: pytest looks each name of that list up among the
    # installed distributions' entry points too, a scan of every package's metadata (about
    # 10 ms a name) that a run of tests that never use the plugin would pay.
    parser.getgroup("npu-hil", "npu-hil: NPU boards in the loop")
    for name in FEATURES:
        pluginmanager.import_plugin(name)


def assert_run_ok(result: ModelRun) -> None:
    """Fail the test with the run's diff summary unless every buffer matched (and every output
    met the accuracy thresholds the test or the manifest set)."""
    __tracebackhide__ = True
    if not result.ok:
        pytest.fail(result.summary(), pytrace=False)


@pytest.fixture
def codec() -> ModuleType:
    """The host codec, :mod:`npu_hil.harness.codec` (``codec.get_layout(...)``)."""
    import npu_hil.harness.codec

    return npu_hil.harness.codec
