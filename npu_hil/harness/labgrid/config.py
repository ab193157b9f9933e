"""What the harness needs to know about a labgrid coordinator (the inventory's ``labgrid:``
section): plain data, checked on creation."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

DEFAULT_PORT = 20408
"""The coordinator's port when an address names none (labgrid's own default)."""

# labgrid's coordinator checks tag keys against this (an initial letter, at least two characters)
# and refuses a reservation whose filter breaks it; checking here turns that into an inventory
# error instead of a refusal at run time.
TAG_KEY_RE = re.compile(r"[a-z][a-z0-9_]+\Z")
# Place names become a ``name=`` reservation filter and file names in the ledger.
PLACE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


def normalise_address(address: str) -> str:
    """``host`` → ``host:20408``; ``host:port`` and ``[v6]:port`` as given."""
    address = address.strip()
    if not address:
        raise ValueError("the coordinator address is empty")
    if address.startswith("["):
        return address if "]:" in address else f"{address}:{DEFAULT_PORT}"
    if address.count(":") == 1:
        host, port = address.split(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"coordinator {address!r}: expected HOST:PORT")
        return address
    if ":" in address:  # a bare IPv6 address
        return f"[{address}]:{DEFAULT_PORT}"
    return f"{address}:{DEFAULT_PORT}"


@dataclass(frozen=True)
class LabgridConfig:
    """One coordinator and the places the harness may use there.

    ``places`` names places; ``tags`` selects every place whose tags include all of them (both may
    be given: the union). ``wait`` is how long to wait for a place another client holds (seconds;
    0 refuses at once). ``refresh`` is the period of the background check that keeps reservations
    alive and notices a place taken away. ``prio`` is the reservations' priority in the
    coordinator's queue. ``target_tag`` is the place tag that names a board's target when the
    inventory does not.
    """

    coordinator: str
    places: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)
    wait: float = 600.0
    refresh: float = 20.0
    prio: float = 0.0
    target_tag: str = "target"

    def __post_init__(self) -> None:
        object.__setattr__(self, "coordinator", normalise_address(self.coordinator))
        object.__setattr__(self, "tags", MappingProxyType(dict(self.tags)))
        if not self.places and not self.tags:
            raise ValueError("expected places, tags or both: which places may the harness use?")
        for name in self.places:
            if not PLACE_RE.match(name):
                raise ValueError(f"place {name!r}: expected letters, digits, '.', '_' or '-'")
        for key in self.tags:
            if not TAG_KEY_RE.match(key):
                raise ValueError(
                    f"tag {key!r}: labgrid wants a lowercase letter, then letters, digits or '_'"
                )
        if self.wait < 0:
            raise ValueError(f"wait {self.wait}: expected seconds >= 0 (0 refuses at once)")
        # Reservations that are not acquired expire 60 s after their last poll: refreshing
        # less often than that would let a waiting reservation lapse.
        if not 0 < self.refresh <= 30:
            raise ValueError(f"refresh {self.refresh}: expected seconds in (0, 30]")


@dataclass(frozen=True)
class PlaceState:
    """A copy of a place as the coordinator last published it."""

    name: str
    tags: Mapping[str, str] = field(default_factory=dict)
    acquired: str | None = None  # "host/user" of the holder
    reservation: str | None = None  # token of the reservation the place is allocated to
    unmatched: str | None = None  # a match no resource of a connected exporter satisfies
    resource_classes: tuple[str, ...] = ()  # classes of the published resources it matches


@dataclass(frozen=True)
class ReservationInfo:
    token: str
    state: str  # waiting, allocated, acquired, expired, invalid
    allocations: tuple[str, ...]
