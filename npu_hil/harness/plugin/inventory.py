"""``--inventory``: which inventory the run uses, and the line that says so when it is the
built-in one.

The farm feature reads the inventory from here, the records feature names it in the run's meta
and run key (and prints :func:`builtin_farm_line` at the end of a run that used boards),
``--simfarm`` points the option at the inventory it wrote: all of them ask
:func:`inventory_path`, none of them another feature.
"""

from __future__ import annotations

from pathlib import Path

import pytest

DEFAULT_INVENTORY = "inventory.yaml"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("npu-hil").addoption(
        "--inventory",
        metavar="FILE",
        default=None,
        help="the board inventory (default: inventory.yaml in the rootdir, when present)",
    )


def inventory_path(config: pytest.Config) -> Path | None:
    """``--inventory``, else ``inventory.yaml`` in the rootdir when there is one."""
    given = config.getoption("inventory", None)
    if given:
        path = Path(given)
        return path if path.is_absolute() else Path(config.invocation_params.dir) / path
    default = Path(config.rootpath) / DEFAULT_INVENTORY
    return default if default.is_file() else None


def builtin_farm_line(config: pytest.Config) -> str | None:
    """The line that names the built-in simulated farm when the run uses it (no inventory given
    or found), so nobody mistakes it for theirs; None when the run has an inventory. Said only
    by a run that used boards: a run of plain tests hears nothing from the plugin."""
    if inventory_path(config) is not None:
        return None
    from npu_hil.harness.farm.starter import builtin_inventory

    count = len(builtin_inventory().boards)
    return (
        f"npu-hil: no inventory given (--inventory FILE) or found ({DEFAULT_INVENTORY} in "
        f"{config.rootpath}): the built-in simulated farm, one simulated board per target "
        f"({count}); `npu-hil inventory init` writes one to edit"
    )
