"""Buffers as callers hand them over: numpy arrays or bytes-like objects."""

from __future__ import annotations

from typing import Any

import numpy as np

from npu_hil.harness.errors import LayoutError


def as_bytes(value: Any, what: str) -> np.ndarray:
    """A buffer given as an array or a bytes-like object, as a flat uint8 array (no copy)."""
    if isinstance(value, np.ndarray):
        contiguous = np.ascontiguousarray(value)
        return contiguous.reshape(-1).view(np.uint8)
    try:
        return np.frombuffer(value, dtype=np.uint8)
    except TypeError as exc:
        raise LayoutError(
            f"{what}: expected a numpy array or a bytes-like buffer, got {type(value).__name__}"
        ) from exc
