"""The codec's byte buffers: 32-byte aligned (Horizon's BPU requires it of every input and output
buffer's first address; the other runtimes are happier with it too), and viewed without a copy,
so that writes through a view reach the buffer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from npu_hil.harness.errors import LayoutError

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


def aligned_like(shape: tuple[int, ...], dtype: np.dtype, align: int = DEFAULT_ALIGN) -> np.ndarray:
    """An uninitialised C-contiguous array of ``shape`` and ``dtype`` on an aligned address."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    return aligned_empty(count * dtype.itemsize, align).view(dtype).reshape(shape)


def as_bytes(value: Any, what: str) -> np.ndarray:
    """A buffer given as an array or a bytes-like object, as a flat uint8 array (no copy)."""
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value).reshape(-1).view(np.uint8)
    try:
        return np.frombuffer(value, dtype=np.uint8)
    except TypeError as exc:
        raise LayoutError(
            f"{what}: expected a numpy array or a bytes-like buffer, got {type(value).__name__}"
        ) from exc


def split_view(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``array`` reshaped to ``shape`` without a copy (it splits axes only), so writes reach it.

    numpy 2.1 says so with ``copy=False`` (a reshape that would copy raises); older numpy, which
    lacks the keyword, takes the shape on a view, which raises the same way (numpy 2.5 deprecates
    that spelling, hence not first)."""
    try:
        try:
            return np.reshape(array, shape, copy=False)
        except TypeError:  # numpy < 2.1: no copy keyword
            view: np.ndarray = array.view()
            view.shape = shape
            return view
    except (ValueError, AttributeError):
        raise ValueError(f"cannot split {array.shape} into {shape} without a copy") from None


def byte_view(
    buf: np.ndarray, offset: int, shape: tuple[int, ...], strides: tuple[int, ...]
) -> np.ndarray:
    """A strided uint8 view of the 1-D byte array ``buf`` from ``offset`` (writeable when
    ``buf`` is)."""
    view: np.ndarray = np.ndarray(shape, np.uint8, buffer=buf, offset=offset, strides=strides)
    if not buf.flags.writeable:
        view.flags.writeable = False
    return view
