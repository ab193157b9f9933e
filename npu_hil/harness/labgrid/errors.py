"""The errors of the labgrid layer.

A coordinator that cannot be reached, a place someone else holds, a place whose resources went
away: all infrastructure, so all :class:`~npu_hil.harness.errors.TransportError` (an *error* outcome
in pytest, never a test failure). A missing labgrid installation is a configuration problem the
user fixes with one command, so it is its own type and says that command.
"""

from __future__ import annotations

from npu_hil.harness.errors import NpuHilError, TransportError

__all__ = ["LabgridError", "LabgridMissingError", "PlaceBusyError", "PlaceLostError"]

INSTALL_HINT = "pip install 'npu-hil[labgrid]'"


class LabgridMissingError(NpuHilError):
    """``source: labgrid`` was asked for, but labgrid is not installed in this environment."""

    def __init__(self, detail: str = "") -> None:
        why = f" ({detail})" if detail else ""
        super().__init__(
            f"boards from a labgrid coordinator need labgrid, which is not installed{why}: "
            f"{INSTALL_HINT}"
        )


class LabgridError(TransportError):
    """The coordinator is unreachable, refused a request, or a place cannot serve as a board."""


class PlaceBusyError(LabgridError):
    """Another client holds (or has reserved) the place, and the configured wait ran out or is
    zero (refuse at once)."""


class PlaceLostError(LabgridError):
    """A place this process held was released or taken over by someone else, or the connection
    to the coordinator broke (a restarted coordinator forgets every acquisition)."""
