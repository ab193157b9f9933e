"""The end of a process that only exits after its session: its heap frozen before the last
garbage collections.

pytest collects garbage several times at unconfigure (to report exceptions raised in
finalizers) and the interpreter again as it shuts down: over a heap of 6,000-12,000 cases'
reports, items and records those walks took 1-3 s each, after the last test. ``gc.freeze``
leaves the objects alive as they are and takes them out of those walks. Frozen are:

- a pytest-xdist worker (the controller waits for it before it can end the run; a worker's
  warnings after its session never reach the controller anyway);
- the pytest process ``npu-hil nightly`` starts (it names the run folder in the environment),
  which exits as its session ends.

A pytest run inside a longer-lived process is never frozen: what it leaves must still be
collectable.
"""

from __future__ import annotations

import gc
import os

import pytest

from npu_hil.harness.plugin.records import RUN_KEY


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or _nightly_run(config):
        gc.freeze()


def _nightly_run(config: pytest.Config) -> bool:
    state = config.stash.get(RUN_KEY, None)
    if state is None or state.run_dir is None:
        return False  # no board case ran: nothing imported for it either
    from npu_hil.harness.report.runs import RUN_DIR_ENV

    return bool(os.environ.get(RUN_DIR_ENV))
