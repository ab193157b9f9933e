"""The board farm: the inventory (what each board is), sessions on boards (simulated or real),
health and recovery (power cycles, retries, circuit breakers), power control and cross-process
locks. A model runs on a session with :func:`npu_hil.harness.pipeline.run_model`.

Works without pytest; the plugin maps its options and markers onto :class:`Farm`.
"""

from __future__ import annotations

from npu_hil.harness.farm.backends import BACKENDS
from npu_hil.harness.farm.breaker import BoardBrokenError, CircuitBreaker
from npu_hil.harness.farm.farm import Farm
from npu_hil.harness.farm.inventory import (
    Board,
    Inventory,
    InventoryError,
    PowerConfig,
    Timeouts,
    TransportConfig,
    load_inventory,
    parse_inventory,
)
from npu_hil.harness.farm.labgrid_boards import resolve_labgrid_boards
from npu_hil.harness.farm.power import power_cycle
from npu_hil.harness.farm.recovery import NO_RETRY, BoardUnhealthyError, RetryPolicy
from npu_hil.harness.farm.session import BoardSession, Health

__all__ = [
    "BACKENDS",
    "NO_RETRY",
    "Board",
    "BoardBrokenError",
    "BoardSession",
    "BoardUnhealthyError",
    "CircuitBreaker",
    "Farm",
    "Health",
    "Inventory",
    "InventoryError",
    "PowerConfig",
    "RetryPolicy",
    "Timeouts",
    "TransportConfig",
    "load_inventory",
    "parse_inventory",
    "power_cycle",
    "resolve_labgrid_boards",
]
