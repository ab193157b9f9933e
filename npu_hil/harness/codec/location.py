"""What sits at a byte offset of a packed buffer: one offset (:class:`Location`) or many at once
(:class:`LocatedOffsets`), as the layout engine's ``locate`` and ``locate_many`` answer."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from typing_extensions import TypedDict

__all__ = ["LocatedOffsets", "Location", "LocationDocument"]


class LocationDocument(TypedDict):
    """:meth:`Location.to_dict`: one located offset as the diff's reports and the CLI write it."""

    offset: int
    index: list[int] | None
    part: str | None
    entry: int | None
    bits: str | None
    padding: bool
    byte_in_element: int | None


@dataclass(frozen=True)
class Location:
    """What sits at one byte offset of a packed buffer."""

    offset: int
    index: tuple[int, ...] | None
    part: str | None
    entry: int | None
    bits: str | None
    padding: bool
    byte_in_element: int | None = None
    axis_names: tuple[str, ...] = ()

    def describe(self) -> str:
        where = f"offset {self.offset}"
        if self.entry is not None:
            where += f", entry {self.entry} bits {self.bits}"
        if self.padding or self.index is None:
            return f"{where}: padding"
        names = self.axis_names or tuple(f"d{i}" for i in range(len(self.index)))
        idx = ", ".join(f"{n}={i}" for n, i in zip(names, self.index, strict=True))
        part = f" ({self.part} byte)" if self.part else ""
        return f"{where}: {idx}{part}"

    def to_dict(self) -> LocationDocument:
        return {
            "offset": self.offset,
            "index": list(self.index) if self.index is not None else None,
            "part": self.part,
            "entry": self.entry,
            "bits": self.bits,
            "padding": self.padding,
            "byte_in_element": self.byte_in_element,
        }


@dataclass(frozen=True)
class LocatedOffsets:
    """Vectorised :class:`Location` for many offsets: ``index`` is (k, rank) in the logical
    shape, ``slot`` the byte slot of the element (see ``Encoding.part_names``), ``padding`` True
    where no stored element lives (``index`` is then meaningless)."""

    offsets: np.ndarray
    index: np.ndarray
    slot: np.ndarray
    padding: np.ndarray
