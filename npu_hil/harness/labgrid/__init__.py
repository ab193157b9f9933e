"""Boards from a labgrid coordinator: places selected by name or tags, reserved through labgrid's
scheduler, acquired for the run, kept alive, and released however the run ends.

Importing this package never imports labgrid (an optional extra: ``pip install
'npu-hil[labgrid]'``); connecting to a coordinator without it raises
:class:`LabgridMissingError`.

- :mod:`~npu_hil.harness.labgrid.config` — what the inventory says about a coordinator, and
  places and reservations as the coordinator reports them;
- :mod:`~npu_hil.harness.labgrid.coordinator` — labgrid's client session, driven synchronously;
- :mod:`~npu_hil.harness.labgrid.places` — reserving, acquiring, refreshing, releasing;
- :mod:`~npu_hil.harness.labgrid.ledger` — places held by this host's processes (crash recovery,
  xdist);
- :mod:`~npu_hil.harness.labgrid.endpoints` — resources → SSH host, serial URL, power resource;
- :mod:`~npu_hil.harness.labgrid.power` — labgrid's power drivers;
- :mod:`~npu_hil.harness.labgrid.exit_hooks` — release at exit and on SIGTERM/SIGHUP;
- :mod:`~npu_hil.harness.labgrid.serial_provider` — which distribution provides ``serial``.
"""

from __future__ import annotations

from npu_hil.harness.labgrid.config import DEFAULT_PORT, LabgridConfig
from npu_hil.harness.labgrid.endpoints import (
    PlaceEndpoints,
    PowerEndpoint,
    ResourceState,
    SerialEndpoint,
    SshEndpoint,
    endpoints_of,
)
from npu_hil.harness.labgrid.errors import (
    LabgridError,
    LabgridMissingError,
    PlaceBusyError,
    PlaceLostError,
)
from npu_hil.harness.labgrid.places import LabgridPlaces

__all__ = [
    "DEFAULT_PORT",
    "LabgridConfig",
    "LabgridError",
    "LabgridMissingError",
    "LabgridPlaces",
    "PlaceBusyError",
    "PlaceEndpoints",
    "PlaceLostError",
    "PowerEndpoint",
    "ResourceState",
    "SerialEndpoint",
    "SshEndpoint",
    "endpoints_of",
    "labgrid_available",
]


def labgrid_available() -> bool:
    """Whether labgrid can be imported here (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("labgrid") is not None
