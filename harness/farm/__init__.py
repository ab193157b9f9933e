"""The board farm: the inventory (what each board is), sessions on boards (simulated or real),
health, power control, cross-process locks, and running a model with every buffer diffed.

Works without pytest; the plugin maps its options and markers onto :class:`Farm`.
"""

from __future__ import annotations

from npu_hil.harness.farm.breaker import BoardBrokenError, CircuitBreaker
from npu_hil.harness.farm.farm import BACKENDS, Farm
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
from npu_hil.harness.farm.runner import ModelRun, TensorRun, run_model
from npu_hil.harness.farm.session import BoardSession, Health

__all__ = [
    "BACKENDS",
    "Board",
    "BoardBrokenError",
    "BoardSession",
    "CircuitBreaker",
    "Farm",
    "Health",
    "Inventory",
    "InventoryError",
    "ModelRun",
    "PowerConfig",
    "TensorRun",
    "Timeouts",
    "TransportConfig",
    "load_inventory",
    "parse_inventory",
    "power_cycle",
    "resolve_labgrid_boards",
    "run_model",
]
