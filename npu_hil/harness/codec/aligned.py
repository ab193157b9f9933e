"""Buffers whose first byte sits on an alignment boundary.

Horizon's BPU requires the first address of every input and output buffer to be 32-byte aligned,
and the other runtimes are happier with it too, so every buffer the codec hands out comes from here.
"""

from __future__ import annotations

import numpy as np

DEFAULT_ALIGN = 32


def aligned_empty(nbytes: int, align: int = DEFAULT_ALIGN) -> np.ndarray:
    """An uninitialised 1-D uint8 array of ``nbytes`` starting on an ``align`` boundary."""
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    if align < 1 or align & (align - 1):
        raise ValueError(f"align must be a power of two, got {align}")
    raw = np.empty(nbytes + align, dtype=np.uint8)
    shift = (-raw.ctypes.data) % align
    # An explicit offset: numpy gives an empty slice its base's address, not the slice's.
    aligned: np.ndarray = np.ndarray((nbytes,), dtype=np.uint8, buffer=raw, offset=shift)
    return aligned


def aligned_zeros(nbytes: int, align: int = DEFAULT_ALIGN) -> np.ndarray:
    """Like :func:`aligned_empty`, filled with zeros."""
    buf = aligned_empty(nbytes, align)
    buf.fill(0)
    return buf


def aligned_like(shape: tuple[int, ...], dtype: np.dtype, align: int = DEFAULT_ALIGN) -> np.ndarray:
    """An uninitialised C-contiguous array of ``shape`` and ``dtype`` on an aligned address."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    return aligned_empty(count * dtype.itemsize, align).view(dtype).reshape(shape)


def is_aligned(array: np.ndarray, align: int = DEFAULT_ALIGN) -> bool:
    """True when the array's first byte is on an ``align`` boundary."""
    return int(array.ctypes.data) % align == 0
