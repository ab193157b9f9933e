"""Views of byte buffers that the codec's engine and its block kernels both take: never a copy,
so that writes through a view reach the buffer."""

from __future__ import annotations

import numpy as np


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
