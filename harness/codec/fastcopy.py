"""Fast strided copies for the layout engine.

Packing a logical tensor into an NPU layout is a copy from a contiguous array into an
``as_strided`` view of a byte buffer, unpacking the reverse. ``np.copyto`` runs such copies in a
fixed loop order, element by element, often 10-30x slower than a contiguous copy of the same
bytes. :func:`strided_copy` hands them to the compiled kernel ``harness.codec._kernels``, which
merges dims, picks the loop order and tiles the transposes, and falls back to ``np.copyto``
when the kernel is not built, when the pair does not qualify, or for tiny copies.

The copy is bitwise: when the dtypes differ (with equal itemsize), ``src`` is reinterpreted as
``dst.dtype``, never cast.

Setting ``NPU_HIL_NO_KERNEL=1`` in the environment before this module is imported forces the
numpy fallback (for tests, and to benchmark the gap).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

import numpy as np

__all__ = ["KERNEL_AVAILABLE", "MIN_KERNEL_BYTES", "kernel_isa", "strided_copy"]

MIN_KERNEL_BYTES = 1024
"""Copies smaller than this go to ``np.copyto``: below it the kernel's fixed cost (about 1 us:
two buffer exports, planning) is not paid back."""


def _kernel_disabled() -> bool:
    return os.environ.get("NPU_HIL_NO_KERNEL", "").strip() not in ("", "0")


def _load_kernel() -> tuple[Callable[[np.ndarray, np.ndarray], bool] | None, str | None]:
    """The kernel's ``copy_arrays`` and its instruction-set level, or ``(None, None)``."""
    if _kernel_disabled():
        return None, None
    try:
        module = importlib.import_module("harness.codec._kernels")
    except ImportError:
        return None, None
    copy_arrays: Callable[[np.ndarray, np.ndarray], bool] = module.copy_arrays
    isa: str = module.get_isa()
    return copy_arrays, isa


_copy_arrays, _isa = _load_kernel()

KERNEL_AVAILABLE: bool = _copy_arrays is not None
"""True when the compiled kernel imported (and ``NPU_HIL_NO_KERNEL`` was not set)."""


def kernel_isa() -> str | None:
    """The instruction-set level of the kernels in use (``"base"``, ``"avx2"``, ``"avx512"``),
    or None when the numpy fallback is in use."""
    return _isa if _copy_arrays is not None else None


def strided_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """Copy ``src`` into ``dst``, byte for byte.

    Both must have the same shape and the same itemsize (``ValueError`` otherwise); either may
    be an arbitrary strided view. The compiled kernel does the copy when it is available and the
    pair qualifies (non-negative strides, ``dst`` writeable with no two elements on one byte, no
    overlap between the two, no object dtype, rank <= 10); ``np.copyto`` does it otherwise.
    Bytes of ``dst``'s buffer outside the view are never written.
    """
    if src.shape != dst.shape:
        raise ValueError(f"strided_copy: shape mismatch: dst {dst.shape}, src {src.shape}")
    if src.itemsize != dst.itemsize:
        raise ValueError(
            f"strided_copy: itemsize mismatch: dst {dst.dtype} ({dst.itemsize} B), "
            f"src {src.dtype} ({src.itemsize} B)"
        )
    copy_arrays = _copy_arrays
    if copy_arrays is not None and dst.nbytes >= MIN_KERNEL_BYTES and copy_arrays(dst, src):
        return
    _numpy_copy(dst, src)


def _numpy_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """The fallback, with the kernel's bitwise semantics."""
    if src.dtype != dst.dtype and not (src.dtype.hasobject or dst.dtype.hasobject):
        src = src.view(dst.dtype)
    np.copyto(dst, src)
