"""The farm's side of labgrid: one :class:`~npu_hil.harness.labgrid.LabgridPlaces` per farm, opened
the first time a labgrid board is used, so a run that never touches one never connects (and a run
with ``--backend sim`` never does).

A place is acquired the first time its board's session opens and held until the farm closes:
acquiring per test would let another user take the board between two tests of a nightly. Only
the boards a run uses are acquired (``--target rk3588`` leaves the other places to others).
Opening the connection also releases what a killed earlier run of this host left acquired.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from npu_hil.harness.farm.inventory import Board
from npu_hil.harness.farm.labgrid_boards import board_at
from npu_hil.harness.labgrid.errors import LabgridError
from npu_hil.harness.labgrid.power import PowerAction

if TYPE_CHECKING:
    from npu_hil.harness.farm.labgrid_inventory import LabgridSection
    from npu_hil.harness.labgrid.places import LabgridPlaces

__all__ = ["FarmPlaces"]

log = logging.getLogger(__name__)


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
            from npu_hil.harness.labgrid.places import LabgridPlaces

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
