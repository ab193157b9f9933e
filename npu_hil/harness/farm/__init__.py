"""The board farm: the inventory, sessions on boards (simulated or real), health and recovery,
power control and cross-process locks; works without pytest.

The names below are imported on first use (PEP 562): the plugin reads the farm's light modules
in every pytest run, and must not pull in the sessions, the agent client and onnx with them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npu_hil.harness.lazyexports import lazy_exports

if TYPE_CHECKING:
    from npu_hil.harness.farm.breaker import BoardBrokenError
    from npu_hil.harness.farm.farm import Farm
    from npu_hil.harness.farm.inventory import (
        Board,
        Inventory,
        InventoryError,
        Timeouts,
        load_inventory,
        parse_inventory,
    )
    from npu_hil.harness.farm.labgrid_boards import resolve_labgrid_boards
    from npu_hil.harness.farm.recovery import (
        NO_RETRY,
        BoardUnhealthyError,
        RetryPolicy,
        power_cycle,
    )
    from npu_hil.harness.farm.session import BoardSession

# name -> the module of this package that defines it (the imports above, for type checkers)
_EXPORTS = {
    "BoardBrokenError": "breaker",
    "Farm": "farm",
    "Board": "inventory",
    "Inventory": "inventory",
    "InventoryError": "inventory",
    "Timeouts": "inventory",
    "load_inventory": "inventory",
    "parse_inventory": "inventory",
    "resolve_labgrid_boards": "labgrid_boards",
    "power_cycle": "recovery",
    "NO_RETRY": "recovery",
    "BoardUnhealthyError": "recovery",
    "RetryPolicy": "recovery",
    "BoardSession": "session",
}

__all__ = [
    "NO_RETRY",
    "Board",
    "BoardBrokenError",
    "BoardSession",
    "BoardUnhealthyError",
    "Farm",
    "Inventory",
    "InventoryError",
    "RetryPolicy",
    "Timeouts",
    "load_inventory",
    "parse_inventory",
    "power_cycle",
    "resolve_labgrid_boards",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)
