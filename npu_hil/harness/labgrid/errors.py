"""The errors of the labgrid layer: infrastructure, so TransportErrors (an *error* outcome in
pytest), except a missing labgrid installation, which says how to install it."""

from __future__ import annotations

from npu_hil.harness.errors import NpuHilError, TransportError


class LabgridMissingError(NpuHilError):
    """``source: labgrid`` was asked for, but labgrid is not installed in this environment."""

    def __init__(self, detail: str = "") -> None:
        why = f" ({detail})" if detail else ""
        super().__init__(
            f"boards from a labgrid coordinator need labgrid, which is not installed{why}: "
            "pip install 'npu-hil[labgrid]'"
        )


class LabgridError(TransportError):
    """The coordinator is unreachable, refused a request, or a place cannot serve as a board."""


class PlaceBusyError(LabgridError):
    """Another client holds (or has reserved) the place, and the configured wait ran out or is
    zero (refuse at once)."""


class PlaceLostError(LabgridError):
    """A place this process held was released or taken over by someone else, or the connection
    to the coordinator broke (a restarted coordinator forgets every acquisition)."""
