"""Checking the parameters and device-reported attributes a layout is built from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from npu_hil.harness.errors import LayoutError


def take_params(
    where: str, params: Mapping[str, object], accepted: tuple[str, ...]
) -> Mapping[str, object]:
    """Refuse parameters a layout does not know, naming the ones it does (their values are
    checked where the layout reads them: :func:`one_int`, :func:`int_tuple`)."""
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        listed = ", ".join(accepted) if accepted else "none"
        raise LayoutError(f"{where}: unknown parameter(s) {', '.join(unknown)}; accepted: {listed}")
    return params


def strict_int(value: Any) -> int:
    """An integer, or ValueError: 24.5 is refused rather than truncated, True is no number."""
    if isinstance(value, bool):
        raise ValueError(f"expected an integer, got {value!r}")
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return int(value)
    if isinstance(value, str):
        return int(value.strip())
    raise ValueError(f"expected an integer, got {value!r}")


def int_tuple(where: str, key: str, value: Any, length: int | None = None) -> tuple[int, ...]:
    """A device-reported list of integers (strides, dims) checked for type and length."""
    if isinstance(value, str):
        value = [v for v in value.replace("x", ",").split(",") if v.strip()]
    try:
        out = tuple(strict_int(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise LayoutError(f"{where}: {key} must be a list of integers, got {value!r}") from exc
    if length is not None and len(out) != length:
        raise LayoutError(f"{where}: {key} must have {length} values, got {len(out)}: {out}")
    return out


def one_int(where: str, key: str, value: Any) -> int:
    try:
        return strict_int(value)
    except (TypeError, ValueError) as exc:
        raise LayoutError(f"{where}: {key} must be an integer, got {value!r}") from exc


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


MAX_BUFFER_BYTES = 16 << 30
"""No tensor buffer of an NPU board is larger: more than the memory of any board listed."""
PADDING_FACTOR = 256
"""How many times its dense size a layout may take. The most the seeds and the observed runtimes
pad a tensor is 64 times (one int8 channel in a C2 = 16 block, its H*W plane rounded up to 4);
a device report beyond this is nonsense to refuse, not a buffer to allocate."""
PADDING_SLACK = 1 << 20
"""Bytes any layout may add on top (alignment of a small tensor's rows and planes)."""


def bounded_size(where: str, key: str, value: int, dense: int) -> int:
    """``value`` (a buffer size or the reach of a layout's dims) when a tensor of ``dense`` bytes
    can need it; LayoutError otherwise, before anything is allocated."""
    bound = min(MAX_BUFFER_BYTES, PADDING_FACTOR * dense + PADDING_SLACK)
    if value > bound:
        shown = f"{value}" if value < 10**30 else f"{float(value):.3g}"
        raise LayoutError(
            f"{where}: {key} {shown} bytes is more than a {dense}-byte tensor can need (at most "
            f"{bound}: {PADDING_FACTOR} times its size plus {PADDING_SLACK}, never over "
            f"{MAX_BUFFER_BYTES})"
        )
    return value
