"""The records feature's view of the pytest session: its run kind (suite, inventory, selection)
and the meta the run's report gets, read off the config and handed to
:mod:`npu_hil.harness.report.runmeta` as plain values."""

from __future__ import annotations

from pathlib import Path

import pytest

from npu_hil.harness.plugin.inventory import inventory_path
from npu_hil.harness.report.runmeta import RunKind, RunMeta, run_kind, run_meta

# options whose presence changes which cases run
SELECTION_OPTIONS = (
    "keyword",
    "markexpr",
    "target",
    "board",
    "backend",
    "simfarm",
    "lf",
    "failedfirst",
    "deselect",
    "ignore",
    "ignore_glob",
    "quarantine_verify",
    "runtime",
)


def _suite_of(config: pytest.Config) -> list[str]:
    """The test paths pytest was given, relative to the rootdir when under it."""
    root = config.rootpath
    paths = []
    for arg in config.args:
        path = Path(arg.split("::")[0])
        path = path if path.is_absolute() else Path(config.invocation_params.dir) / path
        try:
            rel = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            rel = path.resolve().as_posix()
        paths.append(rel + ("::" + arg.split("::", 1)[1] if "::" in arg else ""))
    return paths


def config_run_kind(config: pytest.Config) -> RunKind:
    """The run kind (:func:`npu_hil.harness.report.runmeta.run_kind`) of a pytest session."""
    selection = {name: config.getoption(name, None) for name in SELECTION_OPTIONS}
    if selection.get("backend") == "auto":
        selection["backend"] = None
    return run_kind(_suite_of(config), inventory_path(config), selection)


def session_meta(
    config: pytest.Config, exitstatus: int, started: float, *, stopped: bool = False
) -> RunMeta:
    """The fields the plugin adds to a run's meta at the end of the session; ``sim_faults``:
    the faults ``--sim-fault`` injected (``[{board, fault}]``), so a reader knows the run was
    rigged (they are no part of the run key)."""
    from npu_hil.harness.plugin.sim_faults import parse_board_faults

    meta = run_meta(
        config_run_kind(config),
        exitstatus=exitstatus,
        started=started,
        rootpath=config.rootpath,
        args=list(config.invocation_params.args),
        compare_with=config.getoption("compare_with", None) or "",
        stopped=stopped,
    )
    # checked when the session was configured (npu_hil.harness.plugin.farm): they parse
    faults = parse_board_faults(config.getoption("sim_fault", None) or [])
    meta["sim_faults"] = [f.to_dict() for f in faults]
    return meta
