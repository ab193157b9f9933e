"""Two byte slots one block apart, placed by one strided copy instead of one per slot.

In KL730 4W4C8BHL an entry holds 4 pixels' low bytes (4 bytes a pixel) and, 16 bytes on, their
high bytes; in 16W1C8BHL 16 low bytes then the 16 high bytes. There the slot dim (stride
``part_stride``) sits exactly above the innermost dim of the last axis (``size * stride ==
part_stride``), so the bytes of a row arranged as blocks of ``[B first-slot bytes | B
second-slot bytes]`` (:func:`fastcopy.split16_blocks`) are contiguous with each other on both
sides: the kernel merges block, slot and position into one dim and moves them in one pass, where
the two plane-by-plane copies each moved runs of 4 (or 16) bytes with a gap between.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from npu_hil.harness.codec.fastcopy import join16_blocks, split16_blocks, strided_copy
from npu_hil.harness.codec.views import byte_view, split_view

if TYPE_CHECKING:
    from npu_hil.harness.codec.engine import BlockedLayout, _Piece

ENABLED = True
"""False: every two-slot layout goes plane by plane (tests compare the two paths)."""


SCRATCH_LIMIT = 1 << 26
"""Blocks up to this many bytes go through a scratch buffer kept per thread: a fresh one of a
few MB costs its page faults on every call (as much again as the copy), a reused one once."""

_scratch = threading.local()


def _blocks_buffer(shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialised uint8 array of ``shape``: this thread's scratch when small enough."""
    size = int(np.prod(shape))
    if size > SCRATCH_LIMIT:
        return np.empty(shape, np.uint8)
    held: np.ndarray | None = getattr(_scratch, "buffer", None)
    if held is None or held.size < size:
        held = np.empty(max(size, 1 << 16), np.uint8)
        _scratch.buffer = held
    return held[:size].reshape(shape)


def slot_block(layout: BlockedLayout) -> int | None:
    """The block ``B`` (values per block) when ``layout``'s slots can go as blocks, else None."""
    enc = layout.encoding
    if not ENABLED or enc.interleaved or enc.nparts != 2:
        return None
    axis = len(layout.canonical_shape) - 1
    own = sorted((d for d in layout.dims if d.axis == axis), key=lambda d: -d.block)
    inner = own[-1]
    if inner.block != 1 or inner.stride * inner.size != layout.part_stride:
        return None
    if len(own) == 2 and own[0].block != inner.size:
        return None  # an outer dim that does not count whole inner blocks
    return inner.size


def _modes(layout: BlockedLayout) -> tuple[int, int, bool]:
    """(split mode, join mode, swap) for the kernel: see :func:`fastcopy.split16_blocks`."""
    kind = layout.encoding.kind
    split = 1 if kind == "kl15_hl" else 2 if kind == "kl15" else 0
    return split, 1 if kind == "kl15_hl" else 0, layout.encoding.slot_bytes[0] == 1


def encode(layout: BlockedLayout, values: np.ndarray, block: int) -> np.ndarray:
    """The stored values' bytes as blocks (shape ``(*stored[:-1], nblocks, 2, block)``)."""
    mode, _, swap = _modes(layout)
    nb = -(-values.shape[-1] // block)
    out = _blocks_buffer((*values.shape[:-1], nb, 2, block))
    return split16_blocks(values, block, mode, swap, out=out)


def _pairs(
    layout: BlockedLayout, buf: np.ndarray, blocks: np.ndarray, block: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per piece: (the buffer's view, the blocks' view), the slot dim above the innermost.

    The last axis goes whole blocks only, a partial last block included: the positions past
    the last value in it are padding (no stored index reaches them), and the blocks hold zero
    there, so a row is one run instead of a run and a short tail.
    """
    axis = len(layout.canonical_shape) - 1
    own = sorted((d for d in layout.dims if d.axis == axis), key=lambda d: -d.block)
    nb = blocks.shape[-3]
    tail_shape: tuple[int, ...] = (2, block)
    tail_strides: tuple[int, ...] = (layout.part_stride, own[-1].stride)
    lead_dims = 1
    if len(own) == 2:
        tail_shape, tail_strides = (nb, *tail_shape), (own[0].stride, *tail_strides)
        lead_dims = 2
    pairs = []
    piece: _Piece
    for piece in layout._pieces():
        *lead, last = piece.src_index[:-1]
        if last.start:
            continue  # the partial block, placed with the whole ones
        lead_shape = piece.src_shape[: -1 - lead_dims]
        view = byte_view(
            buf,
            piece.dst_offset,
            (*lead_shape, *tail_shape),
            (*piece.dst_strides[: -1 - lead_dims], *tail_strides),
        )
        index = (*lead, slice(None), slice(None), slice(None))
        source = split_view(blocks[index], (*lead_shape, *tail_shape))
        pairs.append((view, source))
    return pairs


def place(layout: BlockedLayout, buf: np.ndarray, blocks: np.ndarray, block: int) -> None:
    """Copy the blocks into the buffer (the padding is the caller's)."""
    for view, source in _pairs(layout, buf, blocks, block):
        strided_copy(view, source)


def unpack(layout: BlockedLayout, buf: np.ndarray, out: np.ndarray, block: int) -> None:
    """The stored values from the buffer into ``out`` (C-contiguous, the stored shape)."""
    n = out.shape[-1]
    blocks = _blocks_buffer((*out.shape[:-1], -(-n // block), 2, block))
    for view, target in _pairs(layout, buf, blocks, block):
        strided_copy(target, view)
    _, mode, swap = _modes(layout)
    join16_blocks(blocks, out, block, mode, swap)
    layout.encoding.finish_unpack(out)
