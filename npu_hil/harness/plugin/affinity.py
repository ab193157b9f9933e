"""Board affinity under pytest-xdist ``--dist loadgroup``: all of a board's cases on one worker, so
each board's agent starts once and no worker waits on another's board lock.

xdist's own ``@group`` node id suffix no longer reaches the controller under pytest 9.2 (the
groups silently fall apart), so the plugin brings its own scheduler: a case's scope is its board,
read from the board's parameter id. Without workers, a board's cases are put together: run board
after board within each test, with more boards than live agents, 50 boards took 226 agent starts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest


def board_of(nodeid: str, boards: Sequence[str]) -> str | None:
    """The board a case runs on, from its node id's parameter ids (``test_x[2048-rk3588-01]``):
    the longest board name whose ``-``-separated parts appear there as whole parts, in order."""
    if not nodeid.endswith("]") or "[" not in nodeid:
        return None
    parts = nodeid[nodeid.index("[") + 1 : -1].split("-")
    for name in sorted(boards, key=len, reverse=True):
        wanted = name.split("-")
        for start in range(len(parts) - len(wanted) + 1):
            if parts[start : start + len(wanted)] == wanted:
                return name
    return None


def _board_names(config: pytest.Config) -> list[str]:
    from npu_hil.harness.plugin.farm import FARM_KEY

    state = config.stash.get(FARM_KEY, None)
    if state is None:
        return []
    try:
        inventory = state.load_inventory()
    except (Exception, pytest.fail.Exception):  # collection fails on it, with its own message
        return []
    return [board.name for board in inventory.boards]


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup``: the board-aware scheduler; otherwise xdist's own."""
    if config.getoption("dist", None) != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    boards = _board_names(config)

    class BoardScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """xdist's scope scheduling with a board's cases as one scope."""

        def _split_scope(self, nodeid: str) -> str:
            if "@" in nodeid:
                return nodeid.rsplit("@", 1)[-1]
            return board_of(nodeid, boards) or nodeid

    return BoardScheduling(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A run without workers: each board's cases together, at its first case's place (the
    cases of no board keep theirs; the order within a board is kept)."""
    if hasattr(config, "workerinput") or config.getoption("dist", "no") != "no":
        return  # the scheduler groups a worker's cases; every worker must collect alike
    from npu_hil.harness.plugin.farm import board_param

    first: dict[str, int] = {}
    places = []
    for index, item in enumerate(items):
        name = getattr(board_param(item), "name", None)
        places.append(first.setdefault(name, index) if isinstance(name, str) else index)
    if len(first) > 1:
        order = sorted(range(len(items)), key=places.__getitem__)
        items[:] = [items[i] for i in order]
