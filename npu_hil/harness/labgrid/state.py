"""What the coordinator says about places and reservations, as plain data (no labgrid import:
the inventory reads it too)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["PlaceState", "ReservationInfo"]


@dataclass(frozen=True)
class PlaceState:
    """A copy of a place as the coordinator last published it."""

    name: str
    tags: Mapping[str, str]
    comment: str
    acquired: str | None  # "host/user" of the holder
    reservation: str | None  # token of the reservation the place is allocated to
    matches: tuple[str, ...]
    unmatched: str | None  # a match no resource of a connected exporter satisfies
    resource_classes: tuple[str, ...] = ()  # classes of the published resources it matches


@dataclass(frozen=True)
class ReservationInfo:
    token: str
    owner: str
    state: str  # waiting, allocated, acquired, expired, invalid
    allocations: tuple[str, ...]

    @property
    def ready(self) -> bool:
        return self.state in ("allocated", "acquired")
