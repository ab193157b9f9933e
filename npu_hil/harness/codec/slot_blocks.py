"""Two byte slots one block apart, placed by one strided copy instead of one per slot.

KL730 4W4C8BHL and 16W1C8BHL hold a block of low bytes then, ``part_stride`` on, their high
bytes: the slot dim sits exactly above the innermost dim of the last axis, so a row arranged as
blocks of ``[B first-slot bytes | B second-slot bytes]`` (:func:`fastcopy.split16_blocks`) moves in
one pass, where two plane-by-plane copies each moved runs of 4 (or 16) bytes with gaps between.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from npu_hil.harness.codec.buffers import byte_view, split_view
from npu_hil.harness.codec.fastcopy import join16_blocks, split16_blocks, strided_copy

if TYPE_CHECKING:
    from npu_hil.harness.codec.engine import BlockedLayout, _Piece

ENABLED = True
"""False: every two-slot layout goes plane by plane (tests compare the two paths)."""


SCRATCH_LIMIT = 1 << 26
"""Blocks up to this many bytes go through a scratch buffer kept per thread: a fresh one of a
few MB costs its page faults on every call (as much again as the copy), a reused one once."""

_scratch = threading.local()


def _scratch_array(
    name: str, shape: tuple[int, ...], dtype: type[np.generic] = np.uint8
) -> np.ndarray:
    """An uninitialised array of ``shape`` and ``dtype``: this thread's scratch ``name`` when
    small enough (one per name: two may be in use side by side)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if size > SCRATCH_LIMIT:
        return np.empty(shape, dtype)
    held: dict[str, np.ndarray] = getattr(_scratch, "named", None) or {}
    buffer = held.get(name)
    if buffer is None or buffer.size < size:
        buffer = np.empty(max(size, 1 << 16), np.uint8)
        held[name] = buffer
        _scratch.named = held
    return buffer[:size].view(dtype).reshape(shape)


def slot_block(layout: BlockedLayout) -> int | None:
    """The block ``B`` (values per block) when ``layout``'s slots can go as blocks, else None."""
    enc = layout.encoding
    if not ENABLED or enc.interleaved or enc.nparts != 2:
        return None
    axis = len(layout.canonical_shape) - 1
    own = layout.axis_dims(axis)
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
    out = _scratch_array("blocks", (*values.shape[:-1], nb, 2, block))
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
    own = layout.axis_dims(axis)
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


def blocks_fill_buffer(layout: BlockedLayout, block: int) -> bool:
    """True when placing the blocks writes every byte of the buffer (16W1C8BHL: rows of whole
    entries, the unused slots of a partial one zero in its block), so a pack need not clear the
    padding first (cached per layout: finding out costs a pass over a mask of the buffer)."""

    def fills() -> bool:
        mask = np.zeros(layout.nbytes, np.uint8)
        n = layout.stored[-1]
        blocks = np.empty((*layout.stored[:-1], -(-n // block), 2, block), np.uint8)
        for view, _ in _pairs(layout, mask, blocks, block):
            view[...] = 1
        return bool(mask.all())

    return layout.memo("_blocks_fill_buffer", fills)


def place(layout: BlockedLayout, buf: np.ndarray, blocks: np.ndarray, block: int) -> None:
    """Copy the blocks into the buffer (the padding is the caller's)."""
    for view, source in _pairs(layout, buf, blocks, block):
        strided_copy(view, source)


def unpack(layout: BlockedLayout, buf: np.ndarray, out: np.ndarray, block: int) -> None:
    """The stored values from the buffer into ``out`` (C-contiguous, the stored shape)."""
    n = out.shape[-1]
    blocks = _scratch_array("blocks", (*out.shape[:-1], -(-n // block), 2, block))
    for view, target in _pairs(layout, buf, blocks, block):
        strided_copy(target, view)
    _, mode, swap = _modes(layout)
    join16_blocks(blocks, out, block, mode, swap)
    layout.encoding.finish_unpack(out)


# ----------------------------------------------------------------- channel blocks
# KL730 1W16C8BHL: an entry holds one pixel's 16 channels, the 16 low bytes then 16 on the 16
# high bytes, so the slot dim sits above the innermost dim of the *channel* axis. Plane by plane
# that is a split into two byte planes and two byte transposes into half entries; here one
# 16-bit transpose gathers each pixel's channels (rows of 16 values, 32 bytes), one split turns
# every row into a block, and the blocks are the entries: a single copy places them.


def channel_block(layout: BlockedLayout) -> tuple[int, int, bool] | None:
    """(the axis, its block ``B``, :func:`channel_fills_buffer`) when ``layout``'s slots can go
    as channel blocks, else None (cached per layout: a pack of a few MB notices the 10 us it
    takes to work out)."""
    if not ENABLED:
        return None

    def plan() -> tuple[int, int, bool] | None:
        found = _channel_block(layout)
        return None if found is None else (*found, channel_fills_buffer(layout, *found))

    return layout.memo("_channel_block", plan)


def _channel_block(layout: BlockedLayout) -> tuple[int, int] | None:
    """A 16-bit two-slot layout whose one blocked axis (not the last) has an inner dim of
    stride 1 and ``B * 1 == part_stride``, every axis stored whole: (that axis, ``B``)."""
    enc = layout.encoding
    if enc.interleaved or enc.nparts != 2 or layout.dtype.itemsize != 2:
        return None
    if layout.dtype.byteorder not in "=<|" or layout.stored != layout.canonical_shape:
        return None
    last = len(layout.canonical_shape) - 1
    blocked = [a for a in range(last + 1) if sum(d.axis == a for d in layout.dims) == 2]
    if len(blocked) != 1 or blocked[0] == last:
        return None
    axis = blocked[0]
    outer, inner = layout.axis_dims(axis)
    if inner.block != 1 or inner.stride != 1 or outer.block != inner.size:
        return None
    if inner.size != layout.part_stride or inner.size % 16:
        return None
    return axis, inner.size


def _channel_views(
    layout: BlockedLayout, buf: np.ndarray, axis: int, block: int
) -> tuple[np.ndarray, tuple[int, ...]]:
    """The buffer as ``(*axes with ``axis`` counting blocks, 2, block)`` bytes, and the shape
    of the values arranged as blocks, ``(*axes with ``axis`` counting blocks, block)``."""
    shape, strides = [], []
    for a in range(len(layout.canonical_shape)):
        own = layout.axis_dims(a)
        shape.append(own[0].size)
        strides.append(own[0].stride)
    view = byte_view(buf, 0, (*shape, 2, block), (*strides, layout.part_stride, 1))
    return view, (*shape, block)


def channel_fills_buffer(layout: BlockedLayout, axis: int, block: int) -> bool:
    """True when the channel blocks are the whole buffer, back to back: packing them writes
    every byte, the padding (the unused channels of a partial block) as zero."""
    view, _ = _channel_views(layout, np.empty(layout.nbytes, np.uint8), axis, block)
    return bool(view.flags.c_contiguous) and view.size == layout.nbytes


def _split_axis(values: np.ndarray, axis: int, block: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``values`` with ``axis`` as whole blocks moved last (``(..., groups, ..., block)``), and
    the partial last block's values likewise (``(..., ..., rest)``) or None."""
    n = values.shape[axis]
    whole = n // block
    head = np.moveaxis(values[(slice(None),) * axis + (slice(0, whole * block),)], axis, -1)
    grouped = np.moveaxis(split_view(head, (*head.shape[:-1], whole, block)), -2, axis)
    if whole * block == n:
        return grouped, None
    tail = np.moveaxis(values[(slice(None),) * axis + (slice(whole * block, n),)], axis, -1)
    return grouped, tail


def pack_channels(
    layout: BlockedLayout, buf: np.ndarray, values: np.ndarray, axis: int, block: int
) -> None:
    """Place ``values`` (the canonical shape) into ``buf``, padding of the entries included."""
    view, vshape = _channel_views(layout, buf, axis, block)
    lanes = _scratch_array("values", vshape, np.uint16)
    grouped, tail = _split_axis(values.view(np.uint16), axis, block)
    whole = grouped.shape[axis]
    strided_copy(lanes[(slice(None),) * axis + (slice(0, whole),)], grouped)
    if tail is not None:  # zero values past the last: zero bytes, as padding must be
        last = lanes[(slice(None),) * axis + (whole,)]
        last.fill(0)
        strided_copy(last[..., : tail.shape[-1]], tail)
    mode, _, swap = _modes(layout)
    flat = lanes.reshape(1, -1)
    shape = (1, flat.shape[1] // block, 2, block)
    if view.flags.c_contiguous:  # entries back to back: the blocks go straight in
        split16_blocks(flat, block, mode, swap, out=split_view(view, shape))
        return
    blocks = _scratch_array("blocks", shape)
    split16_blocks(flat, block, mode, swap, out=blocks)
    strided_copy(view, blocks.reshape(view.shape))


def unpack_channels(
    layout: BlockedLayout, buf: np.ndarray, out: np.ndarray, axis: int, block: int
) -> None:
    """The values from ``buf`` into ``out`` (C-contiguous, the canonical shape)."""
    view, vshape = _channel_views(layout, buf, axis, block)
    shape = (1, int(np.prod(vshape)) // block, 2, block)
    if view.flags.c_contiguous:
        blocks = split_view(view, shape)
    else:
        blocks = _scratch_array("blocks", shape)
        strided_copy(blocks.reshape(view.shape), view)
    lanes = _scratch_array("values", vshape, np.uint16)
    _, mode, swap = _modes(layout)
    join16_blocks(blocks, lanes.reshape(1, -1), block, mode, swap)
    grouped, tail = _split_axis(out.view(np.uint16), axis, block)
    whole = grouped.shape[axis]
    strided_copy(grouped, lanes[(slice(None),) * axis + (slice(0, whole),)])
    if tail is not None:
        last = lanes[(slice(None),) * axis + (whole,)]
        strided_copy(tail, last[..., : tail.shape[-1]])
    layout.encoding.finish_unpack(out)
