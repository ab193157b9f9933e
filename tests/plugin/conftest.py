"""pytester projects for the plugin's own tests: a small inventory of simulated boards."""

from __future__ import annotations

import textwrap

# In-process pytester runs restore sys.modules afterwards; a C extension with global registries
# (onnx's protobuf descriptors, onnxruntime) imported inside one run and again in the next aborts
# the interpreter. Imported here, before the first snapshot, they stay loaded.
import onnxruntime  # noqa: F401
import pytest

import npu_hil.harness.farm.farm
import npu_hil.harness.pipeline
import npu_hil.harness.report.writer
import npu_hil.harness.sim  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    """Enable pytest's ``pytester`` plugin for these tests.

    ``pytest_plugins = ["pytester"]`` belongs in the rootdir's conftest.py (pytest refuses it in
    a conftest below the rootdir); until it is there, register the plugin when this conftest is
    loaded, giving its two command-line options their defaults first.
    """
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
  - {name: rk3566-01, target: rk3566, backend: sim, transport: local}
  - {name: kl730-01,  target: kl730,  backend: sim, transport: local}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with the three-board inventory and a fast retry backoff."""
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
