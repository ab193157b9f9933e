"""Element encodings: which byte of a value goes into which memory slot of its element, and how
the value is rebuilt (the layout decides where the slots go). The kinds (``raw``, ``raw_be``,
``kl15``, ``kl15_hl``): docs/runtime/codec.md, "The engine".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npu_hil.harness.codec.fastcopy import join16, split16
from npu_hil.harness.errors import LayoutError

ENCODINGS = ("raw", "raw_be", "kl15", "kl15_hl")


@dataclass(frozen=True)
class Encoding:
    """How values of ``dtype`` map to byte slots; see the module docstring for the kinds."""

    kind: str
    dtype: np.dtype
    swapped: bool = False
    """The slots in reverse order: a fault hypothesis (H/L planes or bytes swapped) that
    forensics tries; no vendor format uses it."""

    def __post_init__(self) -> None:
        if self.kind not in ENCODINGS:
            raise LayoutError(
                f"unknown element encoding {self.kind!r}; expected one of {ENCODINGS}"
            )
        if self.kind != "raw" and self.dtype.itemsize != 2:
            raise LayoutError(
                f"encoding {self.kind} is for 16-bit values, got dtype {self.dtype.name}"
            )

    @property
    def nparts(self) -> int:
        return int(self.dtype.itemsize)

    @property
    def part_names(self) -> tuple[str | None, ...]:
        """The name of the byte each slot holds: L/H for 16-bit values, None otherwise."""
        if self.nparts == 1:
            return (None,)
        if self.nparts == 2:
            return tuple("LH"[byte] for byte in self.slot_bytes)
        return (None,) * self.nparts

    @property
    def value_bits(self) -> int:
        """Significant bits a round trip keeps."""
        return 15 if self.kind.startswith("kl15") else 8 * self.nparts

    @property
    def interleaved(self) -> bool:
        """True when the slots are the value's own little-endian bytes in order, so one copy moves
        whole elements (``raw``, ``kl15``); otherwise each slot is copied on its own."""
        return self.kind in ("raw", "kl15") and not self.swapped

    @property
    def slot_bytes(self) -> tuple[int, ...]:
        """For each memory slot, which little-endian byte of the value it holds."""
        order = (1, 0) if self.kind == "raw_be" else tuple(range(self.nparts))
        return order[::-1] if self.swapped else order

    def value_bytes(self, values: np.ndarray) -> np.ndarray:
        """The values' little-endian bytes, shape ``values.shape + (nparts,)`` (a view when the
        array is C-contiguous and native little-endian)."""
        if values.dtype.byteorder == ">" or (values.dtype.byteorder == "=" and _BIG_ENDIAN_HOST):
            values = values.astype(values.dtype.newbyteorder("<"))
        contiguous = np.ascontiguousarray(values)
        out: np.ndarray = contiguous.view(np.uint8).reshape((*values.shape, self.nparts))
        return out

    def pack_interleaved(self, values: np.ndarray) -> np.ndarray:
        """Interleaved encodings: the bytes to copy, slots last."""
        if self.kind == "kl15":
            cleared = np.ascontiguousarray(values).view(np.uint16) & np.uint16(0xFFFE)
            return self.value_bytes(cleared.view(self.dtype))
        return self.value_bytes(values)

    def pack_planes(self, values: np.ndarray) -> list[np.ndarray]:
        """Slot-by-slot encodings: one contiguous uint8 plane per slot, in slot order."""
        low, high = split16(values, kl15=self.kind == "kl15_hl")
        if self.kind == "kl15":
            low &= np.uint8(0xFE)  # bit 0 dropped, as the runtime reads it
        planes = {0: low, 1: high}
        return [planes[byte] for byte in self.slot_bytes]

    def unpack_planes(self, planes: list[np.ndarray], out: np.ndarray) -> None:
        """The inverse of :meth:`pack_planes`, into ``out`` (contiguous)."""
        by_byte = dict(zip(self.slot_bytes, planes, strict=True))
        join16(by_byte[0], by_byte[1], out, kl15=self.kind == "kl15_hl")
        self.finish_unpack(out)

    def finish_unpack(self, out: np.ndarray) -> None:
        """In place, after the slots were copied to the value's bytes (see :meth:`slot_bytes`)."""
        if self.kind == "kl15":
            out.view(np.uint16)[...] &= np.uint16(0xFFFE)

    def decode_slots(self, slots: np.ndarray) -> np.ndarray:
        """Values from their slot bytes: ``slots`` is (k, nparts) uint8 in memory-slot order."""
        values: np.ndarray
        if not self.interleaved:
            values = np.empty(slots.shape[0], self.dtype)
            self.unpack_planes([np.ascontiguousarray(slots[:, s]) for s in range(2)], values)
            return values
        value_bytes = np.zeros((slots.shape[0], self.nparts), dtype=np.uint8)
        for slot, byte in enumerate(self.slot_bytes):
            value_bytes[:, byte] = slots[:, slot]
        values = value_bytes.view(self.dtype.newbyteorder("<")).reshape(-1)
        values = values.astype(self.dtype)
        self.finish_unpack(values)
        return values


_BIG_ENDIAN_HOST = np.little_endian is False
