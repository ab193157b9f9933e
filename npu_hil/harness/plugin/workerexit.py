"""Freeze the heap (``gc.freeze``) before the last garbage collections of a process that exits
after its session: a pytest-xdist worker, or the pytest ``npu-hil nightly`` starts. Over 6,000-
12,000 cases' reports each of pytest's and the interpreter's final walks took 1-3 s. A pytest run
inside a longer-lived process is never frozen: what it leaves must still be collectable."""

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
