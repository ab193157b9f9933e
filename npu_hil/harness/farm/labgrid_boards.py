"""Boards from a labgrid coordinator: the ``labgrid:`` section's places turned into inventory
boards when the farm comes up, and the places the farm holds (:class:`FarmPlaces`), acquired when
a board's session opens and held until the farm closes (docs/farm/labgrid.md).

The places are listed once, not by what happens to be free: every pytest-xdist worker must
collect the same boards.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from pathlib import Path

from npu_hil.harness.codec import known_targets
from npu_hil.harness.farm.inventory import (
    NAME_RE,
    Board,
    Inventory,
    InventoryError,
    LabgridSection,
    PlaceEntry,
    PowerConfig,
)
from npu_hil.harness.labgrid.config import PlaceState
from npu_hil.harness.labgrid.endpoints import POWER_DRIVERS, PlaceEndpoints
from npu_hil.harness.labgrid.errors import LabgridError, LabgridMissingError
from npu_hil.harness.labgrid.places import LabgridPlaces, PowerAction, select_places
from npu_hil.harness.transport.config import SerialConfig, SshConfig
from npu_hil.targets.registry import HW_ADAPTERS, VENDOR_OF

log = logging.getLogger(__name__)

LISTING_TIMEOUT_S = 20.0


def _list_places(section: LabgridSection) -> dict[str, PlaceState] | None:
    """The coordinator's places; None when it cannot be reached (the caller decides whether the
    inventory can do without)."""
    try:
        from npu_hil.harness.labgrid.coordinator import CoordinatorClient
    except LabgridMissingError as exc:
        raise InventoryError(f"{section.where}: {exc.message}") from exc
    try:
        client = CoordinatorClient(section.config.coordinator, connect_timeout=LISTING_TIMEOUT_S)
    except LabgridError as exc:
        log.warning("%s: %s", section.where, exc.message)
        return None
    try:
        return client.places()
    finally:
        client.close()


def _offline(section: LabgridSection) -> list[PlaceState]:
    """Without the coordinator, only places the inventory names with their target can be
    boards (their sessions then fail to connect, and fall back where the inventory allows)."""
    unknown = [name for name, e in section.entries.items() if e.target is None]
    if section.config.tags or unknown:
        what = (
            "which places its tags select"
            if section.config.tags
            else (f"the target of {', '.join(unknown)} (no target: in the inventory)")
        )
        raise InventoryError(
            f"{section.where}: cannot reach the labgrid coordinator "
            f"{section.config.coordinator} to learn {what}"
        )
    return [PlaceState(name) for name in section.entries]


def _link(section: LabgridSection, place: PlaceState) -> str:
    has = {
        "ssh": "NetworkService" in place.resource_classes,
        "serial": "NetworkSerialPort" in place.resource_classes,
    }
    other = "serial" if section.prefer == "ssh" else "ssh"
    return other if has[other] and not has[section.prefer] else section.prefer


def _board(section: LabgridSection, place: PlaceState, taken: set[str]) -> Board:
    # A place the tags selected has no entry of its own: the section's settings are its.
    entry = section.entries.get(place.name) or PlaceEntry.model_construct(place=place.name)
    where = section.at.get(place.name, section.where)
    if not NAME_RE.match(place.name):
        raise InventoryError(
            f"{where}: place {place.name!r}: a board name needs [a-z0-9._-] characters"
        )
    if place.name in taken:
        raise InventoryError(f"{where}: place {place.name!r} has the name of a board in boards")
    tag = section.config.target_tag
    target = entry.target or place.tags.get(tag)
    if target not in known_targets():
        got = f"its {tag} tag is {target!r}" if target else f"it has no {tag} tag"
        raise InventoryError(
            f"{where}: place {place.name}: {got}; tag it (labgrid-client -p {place.name} "
            f"set-tags {tag}=<target>) or give target: in the inventory"
        )
    defaults = section.defaults
    transport = section.ssh if _link(section, place) == "ssh" else section.serial
    has_power = any(cls in POWER_DRIVERS for cls in place.resource_classes)
    return Board(
        name=place.name,
        target=target,
        backend="hw",
        transport=transport,
        fallback=entry.fallback or defaults.fallback,
        adapter=entry.adapter or defaults.adapter or HW_ADAPTERS[VENDOR_OF[target]],
        tags=("labgrid", *(f"{k}={v}" for k, v in sorted(place.tags.items()))),
        python=entry.python or defaults.python,
        workdir=entry.workdir or defaults.workdir,
        power=PowerConfig(labgrid=place.name) if has_power else None,
        timeouts=defaults.timeouts,
        place=place.name,
    )


def resolve_labgrid_boards(inventory: Inventory) -> Inventory:
    """The inventory with a board for every place its ``labgrid`` section selects, after the
    boards of its ``boards`` list (the coordinator is asked once: an inventory whose places are
    listed already comes back as it is). InventoryError (naming the section or the place entry)
    when labgrid is missing, a named place does not exist, or a place's target is unknown."""
    section = inventory.labgrid
    if section is None or inventory.places_listed:
        return inventory
    places = _list_places(section)
    if places is None:
        selected = _offline(section)
    else:
        try:
            selected = select_places(section.config, places)
        except LabgridError as exc:
            missing = next((name for name in section.entries if name not in places), None)
            where = section.at[missing] if missing is not None else section.where
            raise InventoryError(f"{where}: {exc.message}") from None
    taken = {board.name for board in inventory.boards}
    boards = [_board(section, place, taken) for place in selected]
    if not boards:
        log.warning("%s: no place of %s matches", section.where, section.config.coordinator)
    return dataclasses.replace(
        inventory, boards=inventory.boards + tuple(boards), places_listed=True
    )


def board_at(board: Board, endpoints: PlaceEndpoints) -> Board:
    """The board with its transport pointed at the acquired place: the SSH service's host, port
    and user (the inventory's user wins), or the console's URL and speed."""
    config = board.transport
    place = endpoints.place
    if isinstance(config, SshConfig):
        if endpoints.ssh is None:
            hint = " (it has a serial console: prefer: serial)" if endpoints.serial else ""
            raise LabgridError(f"place {place}: no NetworkService to reach it over SSH{hint}")
        config = dataclasses.replace(
            config,
            host=endpoints.ssh.host,
            port=endpoints.ssh.port,
            user=config.user or endpoints.ssh.user,
        )
    elif isinstance(config, SerialConfig):
        if endpoints.serial is None:
            hint = " (it has a NetworkService: prefer: ssh)" if endpoints.ssh else ""
            raise LabgridError(f"place {place}: no NetworkSerialPort for its console{hint}")
        config = dataclasses.replace(
            config, port=endpoints.serial.url, baudrate=endpoints.serial.baudrate
        )
    else:  # the section gives a place an ssh or a serial link, never a local one
        raise LabgridError(f"place {place}: a {config.kind} transport cannot reach a place")
    return dataclasses.replace(board, transport=config)


class FarmPlaces:
    """The places of the inventory's ``labgrid`` section (None: there is none), with the ledger
    under the farm's ``workdir``. ``board_places`` are the places that are boards (as opposed to
    a place a board of the ``boards`` list names only for its power)."""

    def __init__(
        self,
        section: LabgridSection | None,
        workdir: Path,
        board_places: Iterable[str] = (),
    ) -> None:
        self.section = section
        self.workdir = workdir
        self.board_places = frozenset(board_places)
        self._places: LabgridPlaces | None = None

    def _open(self) -> LabgridPlaces:
        if self._places is None:
            if self.section is None:
                raise LabgridError("the inventory has no labgrid section (no coordinator)")
            self._places = LabgridPlaces(self.section.config, workdir=self.workdir)
            if self._places.released_stale:
                log.warning(
                    "released places a killed run left acquired: %s",
                    ", ".join(self._places.released_stale),
                )
        return self._places

    def reach(self, board: Board) -> Board:
        """The board itself, or for a labgrid board: its place acquired (waiting or refusing as
        the inventory says) and its transport pointed at the place's resources."""
        if board.place is None:
            return board
        places = self._open()
        endpoints = places.acquire(board.place)
        try:
            return board_at(board, endpoints)
        except LabgridError:
            places.release(board.place)  # a place this run cannot use is left to others
            raise

    def release(self, board: Board) -> None:
        """Give the board's place back before the farm closes (its board runs simulated)."""
        if board.place is not None and self._places is not None:
            self._places.release(board.place)

    def check(self, board: Board) -> None:
        """PlaceLostError when the board's place was taken away since it was acquired."""
        if board.place is not None and self._places is not None:
            self._places.check(board.place)

    def power(self, place: str, action: PowerAction, *, delay: float) -> None:
        """Switch a place's power with labgrid's driver. A place that is a board must be held by
        this farm already (a board someone else holds is not ours to switch off); a place named
        only for power is acquired first."""
        places = self._open()
        if place not in places.held:
            if place in self.board_places:
                raise LabgridError(
                    f"place {place} is not held by this run: its power is not ours to switch"
                )
            places.acquire(place)
        places.power(place, action, delay=delay)

    def close(self) -> None:
        if self._places is not None:
            self._places.close()
            self._places = None
