"""The one layout engine: a blocked, padded, strided placement of a logical tensor in bytes.

Every vendor format is data for this engine (built in ``npu_hil/targets/``); how it places and
locates bytes: docs/runtime/codec.md, "The engine".
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar, cast

import numpy as np
from numpy.lib.stride_tricks import as_strided
from typing_extensions import TypedDict

from npu_hil.harness.codec import slot_blocks
from npu_hil.harness.codec.buffers import (
    aligned_empty,
    aligned_like,
    as_bytes,
    byte_view,
    split_view,
)
from npu_hil.harness.codec.encodings import Encoding
from npu_hil.harness.codec.fastcopy import strided_copy
from npu_hil.harness.codec.params import bounded_size, strict_int
from npu_hil.harness.errors import LayoutError

PART = -1
"""``Dim.axis`` of the dim that walks the byte slots of one element."""


@dataclass(frozen=True)
class Dim:
    """One physical dimension: ``size`` positions of logical axis ``axis`` (each ``block``
    logical indices apart), ``stride`` bytes apart."""

    axis: int
    size: int
    stride: int
    block: int = 1
    name: str = ""


_ZEROS: list[np.ndarray] = [np.zeros(0, np.uint8)]


def _zeros(n: int) -> np.ndarray:
    """A read-only zero row of at least ``n`` bytes, kept for reuse."""
    if _ZEROS[0].size < n:
        row = np.zeros(max(n, 2 * _ZEROS[0].size), np.uint8)
        row.flags.writeable = False
        _ZEROS[0] = row
    return _ZEROS[0]


def span(dims: list[Dim] | tuple[Dim, ...], nparts: int = 1, part_stride: int = 1) -> int:
    """One past the last byte an element slot can reach through ``dims``."""
    return 1 + sum((d.size - 1) * d.stride for d in dims) + (nparts - 1) * part_stride


def index_text(axis_names: tuple[str, ...], index: tuple[int, ...]) -> str:
    """``c=3, h=0, ...``: a logical index by axis name (``d0``, ``d1``... when unnamed)."""
    names = axis_names or tuple(f"d{a}" for a in range(len(index)))
    return ", ".join(f"{n}={i}" for n, i in zip(names, index, strict=True))


_T = TypeVar("_T")

_AxisOption = tuple[slice, tuple[int, ...], int, tuple[int, ...], tuple[int, ...]]
"""One axis's share of a piece: source slice, source split sizes, buffer offset, view sizes,
view strides."""


@dataclass(frozen=True)
class _Piece:
    """A rectangular region of the logical tensor that maps onto one strided view of the buffer:
    one per combination of (whole blocks, last partial block) over the blocked axes."""

    src_index: tuple[slice, ...]
    src_shape: tuple[int, ...]
    dst_offset: int
    dst_shape: tuple[int, ...]
    dst_strides: tuple[int, ...]


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
    """What sits at one byte offset of a packed buffer (:meth:`BlockedLayout.locate`)."""

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
        part = f" ({self.part} byte)" if self.part else ""
        return f"{where}: {index_text(self.axis_names, self.index)}{part}"

    def to_dict(self) -> LocationDocument:
        data = asdict(self)
        del data["axis_names"]
        data["index"] = list(self.index) if self.index is not None else None
        return cast(LocationDocument, data)


@dataclass(frozen=True)
class LocatedOffsets:
    """Vectorised :class:`Location` for many offsets: ``index`` is (k, rank) in the logical
    shape, ``slot`` the byte slot of the element (see ``Encoding.part_names``), ``padding`` True
    where no stored element lives (``index`` is then meaningless)."""

    offsets: np.ndarray
    index: np.ndarray
    slot: np.ndarray
    padding: np.ndarray


@dataclass(frozen=True)
class BlockedLayout:
    """A logical tensor (``shape``, ``dtype``) placed in ``nbytes`` bytes by ``dims``.

    ``canonical_shape`` is the shape the dims index (a vendor may view a rank-2 tensor as 4-D);
    it holds the same elements as ``shape`` with the size-1 axes ``inserted_axes`` added.
    ``stored`` limits how many indices of each canonical axis are kept in memory (KL730
    ``HW4C8B_DROP_A`` keeps 3 of 4 channels); indices beyond it are written as nothing and read
    back as zero.
    """

    target: str
    name: str
    role: str
    shape: tuple[int, ...]
    dtype: np.dtype
    dims: tuple[Dim, ...]
    nbytes: int
    encoding: Encoding
    part_stride: int = 1
    canonical_shape: tuple[int, ...] = ()
    stored: tuple[int, ...] = ()
    axis_names: tuple[str, ...] = ()
    inserted_axes: tuple[int, ...] = ()
    entry_bytes: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        canonical = self.canonical_shape or self.shape
        object.__setattr__(self, "canonical_shape", tuple(canonical))
        object.__setattr__(self, "stored", tuple(self.stored or canonical))
        if math.prod(canonical) != math.prod(self.shape):
            raise LayoutError(
                f"{self._what}: canonical shape {canonical} does not hold {self.shape}"
            )
        if any(d < 1 for d in self.shape):
            raise LayoutError(f"{self._what}: every dimension must be >= 1, got shape {self.shape}")
        # Before anything reads the dims: a device's geometry must fit what the tensor can need,
        # so no report (a C2 of 10**8, native dims of 10**11) turns into a terabyte buffer.
        dense = math.prod(self.shape) * self.dtype.itemsize
        bounded_size(self._what, "buffer size", self.nbytes, dense)
        bounded_size(self._what, "the dims' reach", self.extent, dense)
        self._check_dims()
        self._check_nesting()

    # ----------------------------------------------------------------- checks

    @property
    def _what(self) -> str:
        return f"{self.target} {self.name} ({self.role})"

    def _check_dims(self) -> None:
        rank = len(self.canonical_shape)
        for axis in range(rank):
            own = [d for d in self.dims if d.axis == axis]
            if not 1 <= len(own) <= 2:
                raise LayoutError(
                    f"{self._what}: axis {axis} needs one or two dims, has {len(own)}"
                )
            reach = own[0].size * own[0].block
            if reach < self.stored[axis]:
                raise LayoutError(
                    f"{self._what}: axis {axis} holds {self.stored[axis]} indices but its dims "
                    f"reach only {reach}"
                )
        if any(d.axis != PART and not 0 <= d.axis < rank for d in self.dims):
            raise LayoutError(f"{self._what}: a dim names an axis outside rank {rank}")
        if self.encoding.nparts > 1 and self.part_stride < 1:
            raise LayoutError(f"{self._what}: part stride must be >= 1")
        extent = self.extent
        if extent > self.nbytes:
            raise LayoutError(
                f"{self._what}: the layout reaches byte {extent - 1} but the buffer has "
                f"{self.nbytes} bytes"
            )

    def _all_dims(self) -> list[Dim]:
        dims = list(self.dims)
        if self.encoding.nparts > 1:
            dims.append(Dim(PART, self.encoding.nparts, self.part_stride, 1, "part"))
        return dims

    def _check_nesting(self) -> None:
        span = 1
        for dim in sorted((d for d in self._all_dims() if d.size > 1), key=lambda d: d.stride):
            if dim.stride < span:
                raise LayoutError(
                    f"{self._what}: strides overlap: dim {dim.name or dim.axis} has stride "
                    f"{dim.stride} but the dims inside it span {span} bytes"
                )
            span = dim.stride * (dim.size - 1) + span

    # ------------------------------------------------------------ properties

    @property
    def extent(self) -> int:
        """One past the last byte any element slot can reach."""
        return span(self.dims, self.encoding.nparts, self.part_stride)

    @property
    def padding_bytes(self) -> int:
        return self.nbytes - math.prod(self.stored) * self.encoding.nparts

    @property
    def strides(self) -> tuple[int, ...]:
        """Byte stride of each logical axis, taken from its innermost dim (for an unblocked
        layout, exactly the strides a runtime such as Horizon's reports)."""
        inner: dict[int, int] = {}
        for dim in self.dims:
            if dim.axis != PART and (dim.axis not in inner or dim.block == 1):
                inner[dim.axis] = dim.stride
        return tuple(inner[a] for a in self.logical_axes)

    # ----------------------------------------------------------- pack/unpack

    def pack(self, array: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The logical tensor → a 1-D uint8 buffer of ``nbytes``, 32-byte aligned, padding zero.

        ``out``, when given, is the buffer to fill (1-D uint8 of ``nbytes``), e.g. memory the
        runtime allocated; it is returned.
        """
        values = self._check_array(array)
        buf = self._out_buffer(out)
        channels = slot_blocks.channel_block(self)
        block = slot_blocks.slot_block(self)
        if self.padding_bytes and not (
            (channels is not None and channels[2])
            or (block is not None and slot_blocks.blocks_fill_buffer(self, block))
        ):
            self._zero_padding(buf)
        canonical = values.reshape(self.canonical_shape)
        if self.stored != self.canonical_shape:
            canonical = canonical[tuple(slice(0, s) for s in self.stored)]
        encoding = self.encoding
        if encoding.interleaved:
            self._copy_in(buf, encoding.pack_interleaved(canonical), slot=None)
        elif channels is not None:
            slot_blocks.pack_channels(self, buf, canonical, *channels[:2])
        elif block is not None:
            slot_blocks.place(self, buf, slot_blocks.encode(self, canonical, block), block)
        else:
            for slot, plane in enumerate(encoding.pack_planes(canonical)):
                self._copy_in(buf, plane, slot=slot)
        return buf

    def unpack(self, buffer: Any, out: np.ndarray | None = None) -> np.ndarray:
        """A packed buffer (bytes-like or array of exactly ``nbytes``) → the logical tensor.

        ``out``, when given, is the C-contiguous array of the logical shape and dtype to fill
        (reused memory saves the first-touch cost of a fresh allocation); it is returned.
        """
        buf = self._check_buffer(buffer)
        if out is None:
            out = aligned_like(self.canonical_shape, self.dtype)
        else:
            if out.shape != self.shape or out.dtype != self.dtype or not out.flags.c_contiguous:
                raise LayoutError(
                    f"{self._what}: out must be a C-contiguous {self.dtype.name} array of shape "
                    f"{self.shape}, got {out.dtype.name} {out.shape}"
                )
            out = out.reshape(self.canonical_shape)
        stored_out = out
        if self.stored != self.canonical_shape:
            out.fill(0)
            stored_out = aligned_like(self.stored, self.dtype)
        nparts = self.encoding.nparts
        if self.encoding.interleaved:
            value_bytes = stored_out.view(np.uint8).reshape((*self.stored, nparts))
            self._copy_out(buf, value_bytes, slot=None)
            self.encoding.finish_unpack(stored_out)
        elif (channels := slot_blocks.channel_block(self)) is not None:
            slot_blocks.unpack_channels(self, buf, stored_out, *channels[:2])
        elif (block := slot_blocks.slot_block(self)) is not None:
            slot_blocks.unpack(self, buf, stored_out, block)
        else:
            planes = [aligned_like(self.stored, np.dtype(np.uint8)) for _ in range(nparts)]
            for slot, plane in enumerate(planes):
                self._copy_out(buf, plane, slot=slot)
            self.encoding.unpack_planes(planes, stored_out)
        if stored_out is not out:
            out[tuple(slice(0, s) for s in self.stored)] = stored_out
        if self.dtype.byteorder == ">":
            out.byteswap(inplace=True)
        return out.reshape(self.shape)

    def _views(
        self, buf: np.ndarray, slot: int | None
    ) -> Iterator[tuple[tuple[slice, ...], tuple[int, ...], np.ndarray]]:
        """Each piece's source index and shape with its strided view of ``buf``: the whole
        element (``slot`` None, the part dim last) or one slot of it."""
        # np.ndarray over the buffer rather than as_strided: the same view (numpy checks that it
        # fits the buffer) for about a tenth of the fixed cost, which is most of a small copy.
        for piece in self._pieces():
            if slot is None:
                view = byte_view(buf, piece.dst_offset, piece.dst_shape, piece.dst_strides)
                yield piece.src_index, piece.src_shape, view
            else:
                start = piece.dst_offset + slot * self.part_stride
                view = byte_view(buf, start, piece.dst_shape[:-1], piece.dst_strides[:-1])
                yield piece.src_index[:-1], piece.src_shape[:-1], view

    def _zero_padding(self, buf: np.ndarray) -> None:
        """Write zero to the padding bytes of ``buf``, and only to them when that is cheaper
        than clearing the whole buffer: a second pass over bytes the copy writes anyway costs
        as much as a memcpy (the padding of NHWC ``w_stride`` rows or of a partial last C2
        block is a few strided runs), while padding spread one byte in four (KL730 4W4C8B's
        pixel gaps) is cleared fastest with the buffer."""
        runs = self._padding_runs()
        if runs is None:
            buf.fill(0)
            return
        zero = _zeros(max(r[1] for r in runs))
        for start, length, count, stride, count2, stride2 in runs:
            if count == 1 and count2 == 1:
                buf[start : start + length].fill(0)
                continue
            view = byte_view(buf, start, (count2, count, length), (stride2, stride, 1))
            strided_copy(view, byte_view(zero, 0, (count2, count, length), (0, 0, 1)))

    def _padding_runs(self) -> list[tuple[int, int, int, int, int, int]] | None:
        """The padding as :func:`strided_runs` (cached per layout)."""
        # Finding the runs costs a few passes over the buffer: a layout packed once clears the
        # whole buffer, one packed again (a nightly's tensors) pays for them once.
        if "_padding_runs_cache" not in self.__dict__ and not self.__dict__.get("_packed_before"):
            object.__setattr__(self, "_packed_before", True)
            return None
        return self.memo("_padding_runs_cache", lambda: strided_runs(self.padding_mask()))

    def _copy_in(self, buf: np.ndarray, source: np.ndarray, slot: int | None) -> None:
        for index, shape, view in self._views(buf, slot):
            strided_copy(view, source[index].reshape(shape))

    def _copy_out(self, buf: np.ndarray, target: np.ndarray, slot: int | None) -> None:
        for index, shape, view in self._views(buf, slot):
            strided_copy(split_view(target[index], shape), view)

    def _out_buffer(self, out: np.ndarray | None) -> np.ndarray:
        if out is None:
            return aligned_empty(self.nbytes)
        if out.dtype != np.uint8 or out.ndim != 1 or out.size != self.nbytes:
            raise LayoutError(
                f"{self._what}: out must be a 1-D uint8 array of {self.nbytes} bytes, got "
                f"{out.dtype.name} {out.shape}"
            )
        if not out.flags.writeable or not out.flags.c_contiguous:
            raise LayoutError(f"{self._what}: out must be writeable and contiguous")
        return out

    def padding_mask(self) -> np.ndarray:
        """A bool per buffer byte: True where no stored element lives.

        Computed once per layout and returned read-only: a nightly diffs the same layout over
        and over, and the mask costs about a pass over the buffer to build.
        """

        def build() -> np.ndarray:
            mask = np.ones(self.nbytes, dtype=bool)
            for piece in self._pieces():
                view = as_strided(mask[piece.dst_offset :], piece.dst_shape, piece.dst_strides)
                view[...] = False
            mask.flags.writeable = False
            return mask

        return self.memo("_padding_mask", build)

    def padding_bytes_mask(self) -> np.ndarray:
        """0xFF where :meth:`padding_mask` is True, else 0 (uint8, cached, read-only): AND it
        with a buffer, eight bytes at a time, to test the padding without gathering it."""

        def build() -> np.ndarray:
            mask: np.ndarray = self.padding_mask().view(np.uint8) * np.uint8(0xFF)
            mask.flags.writeable = False
            return mask

        return self.memo("_padding_bytes_mask", build)

    # ---------------------------------------------------------------- locate

    def locate(self, offset: int) -> Location:
        """What lives at byte ``offset`` (:meth:`locate_many` for one offset)."""
        try:
            offset = strict_int(offset)
        except (TypeError, ValueError) as exc:
            raise LayoutError(f"{self._what}: offset must be an integer, got {offset!r}") from exc
        if not 0 <= offset < self.nbytes:
            raise LayoutError(
                f"{self._what}: offset {offset} is outside the buffer of {self.nbytes} bytes"
            )
        entry = bits = None
        if self.entry_bytes:
            entry, byte = divmod(offset, self.entry_bytes)
            bits = f"[{8 * byte + 7}:{8 * byte}]"
        found = self.locate_many(np.asarray([offset]))
        if found.padding[0]:
            return Location(offset, None, None, entry, bits, True, None, self.axis_names)
        slot = int(found.slot[0])
        part = self.encoding.part_names[slot]
        logical = tuple(int(i) for i in found.index[0])
        return Location(offset, logical, part, entry, bits, False, slot, self.axis_names)

    def offset_of(self, index: tuple[int, ...], slot: int = 0) -> int:
        """Byte offset of slot ``slot`` of the element at logical ``index`` (the forward map)."""
        return int(self.offsets_of(np.asarray([index]), slot)[0])

    def locate_many(self, offsets: np.ndarray) -> LocatedOffsets:
        """What lives at each of ``offsets``: closed form, vectorised, by dividing by the strides
        largest first."""
        rest = np.asarray(offsets, dtype=np.int64).reshape(-1).copy()
        if rest.size and (rest.min() < 0 or rest.max() >= self.nbytes):
            raise LayoutError(f"{self._what}: offsets outside the buffer of {self.nbytes} bytes")
        index = np.zeros((rest.size, len(self.canonical_shape)), dtype=np.int64)
        slot = np.zeros(rest.size, dtype=np.int64)
        padding = np.zeros(rest.size, dtype=bool)
        for dim in self._dims_by_stride():
            pos, rest = np.divmod(rest, dim.stride)
            padding |= pos >= dim.size
            if dim.axis == PART:
                slot = pos
            else:
                index[:, dim.axis] += pos * dim.block
        padding |= rest != 0
        padding |= (index >= np.asarray(self.stored, dtype=np.int64)).any(axis=1)
        logical = index[:, self.logical_axes]
        return LocatedOffsets(np.asarray(offsets).reshape(-1), logical, slot, padding)

    def offsets_of(self, index: np.ndarray, slot: int = 0) -> np.ndarray:
        """:meth:`offset_of` for an (k, rank) array of logical indices."""
        logical = np.asarray(index, dtype=np.int64).reshape(-1, len(self.shape))
        canonical = np.zeros((logical.shape[0], len(self.canonical_shape)), dtype=np.int64)
        canonical[:, self.logical_axes] = logical
        total = np.full(logical.shape[0], slot * self.part_stride, dtype=np.int64)
        for dim in self.dims:
            total += ((canonical[:, dim.axis] // dim.block) % dim.size) * dim.stride
        return total

    # --------------------------------------------------------------- helpers

    def memo(self, key: str, compute: Callable[[], _T]) -> _T:
        """``compute()`` once per layout, kept on it (past the frozen dataclass's ``__setattr__``):
        what the layout alone decides and a nightly would otherwise work out for every tensor."""
        if key not in self.__dict__:
            object.__setattr__(self, key, compute())
        value: _T = self.__dict__[key]
        return value

    def axis_dims(self, axis: int) -> list[Dim]:
        """The dims of canonical ``axis``, the outer one (counting blocks) first."""
        return sorted((d for d in self.dims if d.axis == axis), key=lambda d: -d.block)

    def _dims_by_stride(self) -> list[Dim]:
        dims = [d for d in self._all_dims() if d.size > 1]
        return sorted(dims, key=lambda d: d.stride, reverse=True)

    @property
    def logical_axes(self) -> list[int]:
        """The canonical axis of each logical axis (all but ``inserted_axes``)."""
        return [a for a in range(len(self.canonical_shape)) if a not in self.inserted_axes]

    def block_of(self, axis: int) -> int:
        """The block of logical ``axis`` (a KL730 channel group, RKNN C2); 1 when unblocked."""
        canonical = self.logical_axes[axis]
        return max((d.block for d in self.dims if d.axis == canonical), default=1)

    def _pieces(self) -> list[_Piece]:
        return self.memo("_pieces_cache", self._build_pieces)

    def _build_pieces(self) -> list[_Piece]:
        # Per axis: (src slice, src split sizes, dst offset, dst sizes, dst strides) options.
        per_axis: list[list[_AxisOption]] = []
        for axis, extent in enumerate(self.stored):
            own = self.axis_dims(axis)
            if len(own) == 1:
                dim = own[0]
                per_axis.append([(slice(0, extent), (extent,), 0, (extent,), (dim.stride,))])
                continue
            outer, inner = own
            whole, rest = divmod(extent, inner.size)
            options: list[_AxisOption] = []
            if whole:
                sizes = (whole, inner.size)
                options.append(
                    (slice(0, whole * inner.size), sizes, 0, sizes, (outer.stride, inner.stride))
                )
            if rest:
                options.append(
                    (
                        slice(whole * inner.size, extent),
                        (1, rest),
                        whole * outer.stride,
                        (1, rest),
                        (outer.stride, inner.stride),
                    )
                )
            per_axis.append(options)
        nparts = self.encoding.nparts
        chain = itertools.chain.from_iterable
        return [
            _Piece(
                src_index=(*(c[0] for c in combo), slice(None)),
                src_shape=(*chain(c[1] for c in combo), nparts),
                dst_offset=sum(c[2] for c in combo),
                dst_shape=(*chain(c[3] for c in combo), nparts),
                dst_strides=(*chain(c[4] for c in combo), self.part_stride),
            )
            for combo in itertools.product(*per_axis)
        ]

    def _check_array(self, array: Any) -> np.ndarray:
        values = np.asarray(array)
        if values.shape != self.shape:
            raise LayoutError(
                f"{self._what}: expected a tensor of shape {self.shape}, got {values.shape}"
            )
        if values.dtype != self.dtype:
            want, got = self.dtype.name, values.dtype.name
            if want == got:  # same kind, other byte order: say so
                want, got = self.dtype.str, values.dtype.str
            raise LayoutError(f"{self._what}: expected dtype {want}, got {got}")
        return values

    def _check_buffer(self, buffer: Any) -> np.ndarray:
        buf = as_bytes(buffer, self._what)
        if buf.size != self.nbytes:
            diff = buf.size - self.nbytes
            how = f"{abs(diff)} bytes {'long' if diff > 0 else 'short'}"
            raise LayoutError(
                f"{self._what}: expected a buffer of {self.nbytes} bytes, got {buf.size} ({how})"
            )
        return np.asarray(buf, dtype=np.uint8)


# ------------------------------------------------------------------ padding runs

MAX_PADDING_RUNS = 16
"""Most strided runs :meth:`BlockedLayout._zero_padding` zeroes one by one (each costs a few
microseconds of Python) before it clears the whole buffer instead."""

RUN_COST_BYTES = 32
"""What zeroing one run costs beyond its bytes, in bytes of a whole-buffer clear (a store or a
short move per run against a memset's 32 bytes a cycle): the runs are zeroed one by one when
``runs * RUN_COST_BYTES + padding bytes < buffer bytes``, else the whole buffer is cleared."""


def strided_runs(mask: np.ndarray) -> list[tuple[int, int, int, int, int, int]] | None:
    """The True bytes of ``mask`` as few strided runs ``(start, length, count, stride, count2,
    stride2)``: ``count2`` groups ``stride2`` apart of ``count`` stretches of ``length`` bytes
    ``stride`` apart (a row tail in every row of every plane), so a buffer packed again zeroes
    only its padding; or None when there are more than :data:`MAX_PADDING_RUNS` or so many
    short ones that clearing the whole buffer is cheaper (:data:`RUN_COST_BYTES`)."""
    flags = np.concatenate(([False], np.asarray(mask, dtype=bool), [False])).view(np.int8)
    edges = np.flatnonzero(np.diff(flags))
    starts, ends = edges[0::2], edges[1::2]
    if starts.size == 0:
        return []
    lengths = ends - starts
    if RUN_COST_BYTES * starts.size + int(lengths.sum()) >= mask.size:
        return None
    level1 = _progressions(starts, lengths)
    if level1 is None:
        return None
    # Second level: equal first-level runs spaced evenly (one per row or per plane).
    groups: dict[tuple[int, int, int], list[int]] = {}
    for start, length, count, stride in level1:
        groups.setdefault((length, count, stride), []).append(start)
    runs: list[tuple[int, int, int, int, int, int]] = []
    for (length, count, stride), group_starts in groups.items():
        first = np.asarray(group_starts, dtype=np.int64)
        ones = np.ones(first.size, dtype=np.int64)
        level2 = _progressions(first, ones)
        if level2 is None:
            return None
        runs.extend((s, length, count, stride, n, step) for s, _, n, step in level2)
        if len(runs) > MAX_PADDING_RUNS:
            return None
    return runs


def _progressions(
    starts: np.ndarray, lengths: np.ndarray, limit: int = 4 * MAX_PADDING_RUNS
) -> list[tuple[int, int, int, int]] | None:
    """Sorted ``starts`` with their ``lengths`` as maximal arithmetic progressions of equal
    length, ``(start, length, count, step)``; None beyond ``limit`` of them."""
    n = int(starts.size)
    step = np.diff(starts)
    # Start indices where the step (to the next start) or the length changes.
    step_changes = np.flatnonzero(step[1:] != step[:-1]) + 1
    length_changes = np.flatnonzero(lengths[1:] != lengths[:-1]) + 1
    out: list[tuple[int, int, int, int]] = []
    i = 0
    while i < n:
        if len(out) >= limit:
            return None
        if i == n - 1:
            out.append((int(starts[i]), int(lengths[i]), 1, 1))
            break
        # The progression from i keeps step[i] through start index j_step and the length
        # through j_len.
        k = int(np.searchsorted(step_changes, i, side="right"))
        j_step = int(step_changes[k]) if k < step_changes.size else n - 1
        k = int(np.searchsorted(length_changes, i, side="right"))
        j_len = int(length_changes[k]) - 1 if k < length_changes.size else n - 1
        j = min(j_step, j_len)
        if j == i:
            out.append((int(starts[i]), int(lengths[i]), 1, 1))
        else:
            out.append((int(starts[i]), int(lengths[i]), j - i + 1, int(step[i])))
        i = j + 1
    return out
