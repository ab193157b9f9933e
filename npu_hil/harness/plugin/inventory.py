"""``--inventory``: which inventory the run uses, and the line that says so when it is the built-in
one. Every feature asks :func:`inventory_path`, never another feature."""

from __future__ import annotations

from pathlib import Path

import pytest

DEFAULT_INVENTORY = "inventory.yaml"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("npu-hil").addoption(
        "--inventory",
        metavar="FILE",
        help="the board inventory (default: inventory.yaml beside the inifile, else in the "
        "folder pytest runs in, when present)",
    )


def _candidates(config: pytest.Config) -> list[Path]:
    """Where ``inventory.yaml`` is looked for, in order: the folder of pytest's inifile (the
    project's), the folder pytest was started in, and a rootdir given with ``--rootdir``. Never
    a rootdir pytest inferred: an option's value (``--reports DIR`` with DIR an existing folder)
    can move that to a parent folder, and the run would silently take the built-in farm."""
    folders = []
    if config.inipath is not None:
        folders.append(Path(config.inipath).parent)
    folders.append(Path(config.invocation_params.dir))
    if getattr(config.option, "rootdir", None):
        folders.append(Path(config.rootpath))
    return list(dict.fromkeys(folder / DEFAULT_INVENTORY for folder in folders))


def inventory_path(config: pytest.Config) -> Path | None:
    """``--inventory``, else the first ``inventory.yaml`` of :func:`_candidates`."""
    given = config.getoption("inventory", None)
    if given:
        path = Path(given)
        return path if path.is_absolute() else Path(config.invocation_params.dir) / path
    return next((path for path in _candidates(config) if path.is_file()), None)


def inventory_line(config: pytest.Config) -> str:
    """The console's line naming the inventory a run that used boards took: the file, or why
    it is the built-in simulated farm (where an inventory was looked for)."""
    path = inventory_path(config)
    if path is not None:
        return f"npu-hil: inventory {path}"
    from npu_hil.harness.farm.starter import builtin_inventory

    count = len(builtin_inventory().boards)
    looked = " or ".join(str(p.parent) for p in _candidates(config))
    return (
        f"npu-hil: no inventory given (--inventory FILE) or found ({DEFAULT_INVENTORY} in "
        f"{looked}): the built-in simulated farm, one simulated board per target "
        f"({count}); `npu-hil inventory init` writes one to edit"
    )


def inventory_source(config: pytest.Config) -> str:
    """The inventory file this run uses, or the built-in farm's name for it."""
    path = inventory_path(config)
    if path is None:
        from npu_hil.harness.farm.starter import BUILTIN_SOURCE

        return BUILTIN_SOURCE
    return str(path)


def health_key(config: pytest.Config) -> str:
    """The key of this run's kept board health: its inventory file's, or for the built-in farm
    the folder pytest was started in (the project's)."""
    from npu_hil.harness.farm.health_store import state_key

    return state_key(inventory_source(config), config.invocation_params.dir)
