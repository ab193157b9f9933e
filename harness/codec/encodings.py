"""Element encodings: how one logical value becomes the bytes a layout places in memory.

An encoding turns an array of values into an array with one more axis, ``parts``, of uint8: the
bytes of each value in the order of the memory slots the layout gives them (slot 0 at the element's
base offset, slot k at ``k * part_stride``). The layout decides where the slots go; the encoding
only decides which byte of the value goes into which slot and how the value is rebuilt.

- ``raw``: the value's little-endian bytes (slot 0 is the low byte) — int8/uint8 have one part.
- ``raw_be``: big-endian bytes (slot 0 is the high byte), for KL730 ``HW1C16B_BE``.
- ``kl15``: 16-bit little-endian with bit 0 dropped. The Kneron runtime reads 16-bit NPU data as
  ``int16(u16 & 0xFFFE)`` (15 significant bits); packing clears bit 0 so what the host writes is
  what the device will see.
- ``kl15_hl``: the KL730 high/low byte planes. The low plane holds bits [7:1] of the value in its
  low 7 bits, the high plane bits [15:8]; the value is ``int16(((lo & 0x7F) | (hi << 7)) << 1)``.
  Bit 0 is lost, as on the device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.errors import LayoutError

ENCODINGS = ("raw", "raw_be", "kl15", "kl15_hl")


@dataclass(frozen=True)
class Encoding:
    """How values of ``dtype`` map to byte slots; see the module docstring for the kinds."""

    kind: str
    dtype: np.dtype

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
            return ("H", "L") if self.kind == "raw_be" else ("L", "H")
        return (None,) * self.nparts

    @property
    def value_bits(self) -> int:
        """Significant bits a round trip keeps."""
        return 15 if self.kind.startswith("kl15") else 8 * self.nparts

    @property
    def is_view(self) -> bool:
        """True when encoding is a reinterpretation of the value's own bytes (no arithmetic)."""
        return self.kind == "raw"

    def encode(self, values: np.ndarray) -> np.ndarray:
        """``values`` (C-contiguous, this dtype) → uint8 of shape ``values.shape + (nparts,)``."""
        shape = (*values.shape, self.nparts)
        if self.kind == "raw":
            le = (
                values
                if values.dtype.byteorder in "<=|"
                else values.astype(values.dtype.newbyteorder("<"))
            )
            raw: np.ndarray = np.ascontiguousarray(le).view(np.uint8).reshape(shape)
            return raw
        u16 = np.ascontiguousarray(values).view(np.uint16)
        out: np.ndarray
        if self.kind == "raw_be":
            out = u16.astype(">u2").view(np.uint8).reshape(shape)
            return out
        if self.kind == "kl15":
            out = (u16 & np.uint16(0xFFFE)).view(np.uint8).reshape(shape)
            return out
        out = np.empty(shape, dtype=np.uint8)
        low = u16 >> 1
        low &= np.uint16(0x7F)
        out[..., 0] = low
        out[..., 1] = u16 >> 8
        return out

    def decode_into(self, parts: np.ndarray, out: np.ndarray) -> None:
        """Rebuild values from ``parts`` (shape ``out.shape + (nparts,)``) into ``out``."""
        if self.kind == "raw":
            out.view(np.uint8).reshape(parts.shape)[...] = parts
            if out.dtype.byteorder == ">":
                out.byteswap(inplace=True)
            return
        u16 = out.view(np.uint16)
        if self.kind == "raw_be":
            u16[...] = parts[..., 0]
            u16 <<= 8
            u16 |= parts[..., 1]
            return
        if self.kind == "kl15":
            u16.view(np.uint8).reshape(parts.shape)[...] = parts
            u16 &= np.uint16(0xFFFE)
            return
        u16[...] = parts[..., 1]
        u16 <<= 7
        u16 |= parts[..., 0] & np.uint8(0x7F)
        u16 <<= 1

    def view_target(self, out: np.ndarray) -> np.ndarray | None:
        """The output's own bytes as the parts array, where the slots are the value's
        little-endian bytes (``raw``, ``kl15``): unpack then copies straight into the result and
        only :meth:`finish_in_place` remains. None where a decode pass is needed."""
        native = out.dtype.byteorder in "<=|" and out.flags.c_contiguous
        if self.kind in ("raw", "kl15") and native:
            return out.view(np.uint8).reshape((*out.shape, self.nparts))
        return None

    def finish_in_place(self, out: np.ndarray) -> None:
        """The step left after bytes were copied through :meth:`view_target`."""
        if self.kind == "kl15":
            out.view(np.uint16)[...] &= np.uint16(0xFFFE)
