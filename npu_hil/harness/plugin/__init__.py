"""The npu-hil pytest plugin (entry point ``pytest11``).

Inert until used: installed in any environment it registers its options, markers and fixtures and
nothing else. The inventory is read, boards are locked and a report folder is created only when a
test asks for a board (the ``board`` or ``run_model`` fixture, or a ``soc``/``vendor`` marker).

One feature per module, each with its own options, hooks and state:

- :mod:`npu_hil.harness.plugin` — the option group and the ``codec`` fixture (this module);
- :mod:`npu_hil.harness.plugin.inventory` — ``--inventory``: which inventory the run uses;
- :mod:`npu_hil.harness.plugin.outcomes` — how a test counts: infrastructure trouble is an error;
- :mod:`npu_hil.harness.plugin.records` — ``--reports``, ``--compare-with``: one record per test,
  JUnit properties, the run's report (fed by the features below, read by none of them);
- :mod:`npu_hil.harness.plugin.farm` — ``--backend``, ``--target``, ``--board``, ``--keep-remote``,
  ``--hil-retries``, ``--hil-breaker``, the markers: the farm, parametrisation over boards, the
  ``board`` fixture;
- :mod:`npu_hil.harness.plugin.affinity` — under pytest-xdist's ``--dist loadgroup``, every case
  of one board on one worker;
- :mod:`npu_hil.harness.plugin.quarantine` — ``--quarantine``, ``--quarantine-verify``: listed tests
  run, their failures reported as quarantined instead of failing the run;
- :mod:`npu_hil.harness.plugin.perf` — the ``perf`` marker: runs, warm-up and latency thresholds;
- :mod:`npu_hil.harness.plugin.history` — ``--baseline-runs``, ``--baseline-k``,
  ``--baseline-floor``,
  ``--history-keep``, ``--no-baseline``: each case against its baseline, the run kept in the
  history;
- :mod:`npu_hil.harness.plugin.run` — the ``run_model`` fixture and :func:`assert_run_ok`;
- :mod:`npu_hil.harness.plugin.simfarm` — ``--simfarm``: the board tests over real SSH and serial
  links;
- :mod:`npu_hil.harness.plugin.workerexit` — a process that only exits after its session (an
  xdist worker, the nightly's pytest) freezes its heap as it ends.

Recovery and retry policy are the farm library's (:mod:`npu_hil.harness.farm.recovery`): the plugin
maps its options onto them.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from npu_hil.harness.plugin.assertion import assert_run_ok

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
    "npu_hil.harness.plugin.perf",
    "npu_hil.harness.plugin.history",
    "npu_hil.harness.plugin.run",
    "npu_hil.harness.plugin.simfarm",
    "npu_hil.harness.plugin.workerexit",
)
GROUP = "npu-hil"


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    # The group's title first, then the features, each registered here and adding its options
    # as it registers. Not `pytest_plugins`: pytest looks each name of that list up among the
    # installed distributions' entry points too, a scan of every package's metadata (about
    # 10 ms a name) that a run of tests that never use the plugin would pay.
    parser.getgroup(GROUP, "npu-hil: NPU boards in the loop")
    for name in FEATURES:
        pluginmanager.import_plugin(name)


@pytest.fixture
def codec() -> ModuleType:
    """The host codec, :mod:`npu_hil.harness.codec` (``codec.get_layout(...)``)."""
    import npu_hil.harness.codec

    return npu_hil.harness.codec
