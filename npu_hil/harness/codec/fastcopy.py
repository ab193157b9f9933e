"""Fast strided copies for the layout engine: ``np.copyto`` runs a strided copy element by element
in a fixed loop order, often 10-30x slower than a contiguous copy of the same bytes, so
:func:`strided_copy` hands it to the compiled kernel ``_kernels`` (dims merged, loop order picked,
transposes tiled), or to ``np.copyto`` without it. Bitwise: ``src`` is reinterpreted as
``dst.dtype``, never cast. ``NPU_HIL_NO_KERNEL=1`` before import forces the numpy fallback.
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
        module = importlib.import_module("npu_hil.harness.codec._kernels")
    except ImportError:
        return None, None
    copy_arrays: Callable[[np.ndarray, np.ndarray], bool] = module.copy_arrays
    isa: str = module.get_isa()
    global _split16, _join16, _split16_blocks, _join16_blocks
    _split16, _join16 = module.split16, module.join16
    _split16_blocks, _join16_blocks = module.split16_blocks, module.join16_blocks
    return copy_arrays, isa


_PlanesFn = Callable[[np.ndarray, np.ndarray, np.ndarray, int], None]
_split16: _PlanesFn | None = None
_join16: _PlanesFn | None = None
_BlocksFn = Callable[[np.ndarray, np.ndarray, int, int, int, int], None]
_split16_blocks: _BlocksFn | None = None
_join16_blocks: _BlocksFn | None = None
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


def split16(values: np.ndarray, kl15: bool) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous 16-bit values → (low plane, high plane), contiguous uint8 each.

    ``kl15``: the KL730 runtime's reading, the low plane holding bits [7:1] of each value;
    otherwise the plain low and high bytes.
    """
    flat = np.ascontiguousarray(values).reshape(-1).view(np.uint16)
    low = np.empty(flat.size, np.uint8)
    high = np.empty(flat.size, np.uint8)
    if _split16 is not None and flat.dtype.byteorder in "=<|":
        _split16(flat, low, high, int(kl15))
    else:
        np.right_shift(flat, 8, out=high, casting="unsafe")
        if kl15:
            np.bitwise_and(flat >> 1, 0x7F, out=low, casting="unsafe")
        else:
            np.bitwise_and(flat, 0xFF, out=low, casting="unsafe")
    return low.reshape(values.shape), high.reshape(values.shape)


def join16(low: np.ndarray, high: np.ndarray, out: np.ndarray, kl15: bool) -> None:
    """The inverse of :func:`split16`, into ``out`` (contiguous, 16-bit)."""
    target = out.reshape(-1).view(np.uint16)
    lo = np.ascontiguousarray(low).reshape(-1)
    hi = np.ascontiguousarray(high).reshape(-1)
    if _join16 is not None and target.dtype.byteorder in "=<|":
        _join16(target, lo, hi, int(kl15))
        return
    np.left_shift(hi, 8, out=target, dtype=np.uint16)
    if kl15:
        target |= (lo & np.uint8(0x7F)).astype(np.uint16) << 1
    else:
        target |= lo


def _block_planes(blocks: np.ndarray, n: int, block: int) -> tuple[np.ndarray, np.ndarray]:
    """``blocks`` (rows x ceil(n / block) * 2 * block bytes) → the first-slot and the
    second-slot byte of each value, (rows, n) each (the fallback's way back)."""
    nb, full = -(-n // block), n // block
    grid = blocks.reshape(-1, nb, 2, block)
    planes = []
    for slot in (0, 1):
        plane = grid[:, :full, slot, :].reshape(grid.shape[0], full * block)
        if full < nb:
            plane = np.concatenate([plane, grid[:, full, slot, : n - full * block]], axis=1)
        planes.append(plane)
    return planes[0], planes[1]


def split16_blocks(
    values: np.ndarray, block: int, mode: int, swap: bool, out: np.ndarray | None = None
) -> np.ndarray:
    """Contiguous 16-bit values, rows of ``n`` (the last axis), → their bytes in blocks: each
    row becomes ``ceil(n / block)`` blocks of ``2 * block`` bytes, the ``block`` first-slot
    bytes then the ``block`` second-slot bytes (uint8, shape ``(*values.shape[:-1], nblocks, 2,
    block)``; the unused bytes of a partial last block are zero).

    ``mode``: 0 the plain low byte, 1 the KL730 15-bit reading (bits [7:1]), 2 the low byte
    with bit 0 dropped; ``swap``: the high byte in the first slot; ``out``: where to write them
    (C-contiguous uint8 of that shape). A layout whose two slots are one block apart (KL730
    4W4C8BHL, 16W1C8BHL) takes these blocks in one strided copy.
    """
    flat = np.ascontiguousarray(values).view(np.uint16)
    n = flat.shape[-1]
    nb = -(-n // block)
    shape = (*flat.shape[:-1], nb, 2, block)
    if out is None:
        out = np.empty(shape, np.uint8)
    elif out.shape != shape or out.dtype != np.uint8 or not out.flags.c_contiguous:
        raise ValueError(f"split16_blocks: out must be C-contiguous uint8 of shape {shape}")
    if _split16_blocks is not None and flat.dtype.byteorder in "=<|":
        _split16_blocks(flat, out, n, block, mode, int(swap))
        return out
    rows = flat.reshape(-1, n)
    count = rows.shape[0]
    high = (rows >> 8).astype(np.uint8)
    if mode == 1:
        low = ((rows >> 1) & 0x7F).astype(np.uint8)
    else:
        low = (rows & (0xFE if mode == 2 else 0xFF)).astype(np.uint8)
    first, second = (high, low) if swap else (low, high)
    grid = out.reshape(count, nb, 2, block)
    full = n // block
    for slot, plane in enumerate((first, second)):
        grid[:, :full, slot, :] = plane[:, : full * block].reshape(count, full, block)
        if full < nb:
            grid[:, full, slot, : n - full * block] = plane[:, full * block :]
            grid[:, full, slot, n - full * block :] = 0
    return out


def join16_blocks(blocks: np.ndarray, out: np.ndarray, block: int, mode: int, swap: bool) -> None:
    """The inverse of :func:`split16_blocks`, into ``out`` (contiguous 16-bit, rows of
    ``out.shape[-1]``); mode 2 leaves bit 0 clear."""
    target = out.view(np.uint16)
    n = target.shape[-1]
    if _join16_blocks is not None and target.dtype.byteorder in "=<|":
        _join16_blocks(target, np.ascontiguousarray(blocks), n, block, mode, int(swap))
        return
    first, second = _block_planes(np.ascontiguousarray(blocks), n, block)
    low, high = (second, first) if swap else (first, second)
    rows = target.reshape(-1, n)
    np.left_shift(high, 8, out=rows, dtype=np.uint16)
    if mode == 1:
        rows |= (low & np.uint8(0x7F)).astype(np.uint16) << 1
    else:
        rows |= low & np.uint8(0xFE if mode == 2 else 0xFF)
