"""The one registry from target names to the vendor modules that build their layouts.

Vendor modules live in ``targets/`` and register themselves on import; the registry imports them
lazily so that ``import harness`` stays cheap and ``targets`` can import the engine freely.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from math import prod
from typing import Any, Protocol

import numpy as np

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.codec.params import MAX_BUFFER_BYTES, strict_int
from npu_hil.harness.errors import LayoutError

ROLES = ("input", "output")

VENDOR_MODULES = (
    "npu_hil.targets.kl730",
    "npu_hil.targets.rockchip_layouts",
    "npu_hil.targets.horizon",
)


class LayoutBuilder(Protocol):
    """Builds the layout ``name`` of ``target`` for a logical tensor."""

    def __call__(
        self,
        target: str,
        name: str,
        shape: tuple[int, ...],
        dtype: np.dtype,
        role: str,
        params: dict[str, Any],
    ) -> BlockedLayout: ...


_BUILDERS: dict[str, LayoutBuilder] = {}
_LAYOUT_NAMES: dict[str, Callable[[], tuple[str, ...]]] = {}
_ALL_LOADED: list[bool] = []


def register(
    targets: tuple[str, ...], builder: LayoutBuilder, layouts: Callable[[], tuple[str, ...]]
) -> None:
    """Called by a vendor module for the targets it serves."""
    for target in targets:
        _BUILDERS[target] = builder
        _LAYOUT_NAMES[target] = layouts


def _load() -> None:
    # Every vendor module, even when one was imported directly first and registered alone.
    if not _ALL_LOADED:
        for module in VENDOR_MODULES:
            importlib.import_module(module)
        _ALL_LOADED.append(True)


def known_targets() -> tuple[str, ...]:
    _load()
    return tuple(_BUILDERS)


def layout_names(target: str) -> tuple[str, ...]:
    """The layout names ``target`` knows (for both roles)."""
    _load()
    _require_target(target)
    return _LAYOUT_NAMES[target]()


def _require_target(target: str) -> None:
    if target not in _BUILDERS:
        raise LayoutError(f"unknown target {target!r}; known targets: {', '.join(known_targets())}")


def get_layout(
    target: str,
    layout: str,
    shape: tuple[int, ...] | list[int],
    dtype: Any,
    *,
    role: str = "output",
    **params: Any,
) -> BlockedLayout:
    """The layout ``layout`` of ``target`` for a logical tensor of ``shape`` and ``dtype``.

    ``role`` is ``"input"`` or ``"output"``; ``params`` are the vendor's knobs and the attributes a
    device reported (``w_stride``, ``native_dims``, ``stride``, ``stride_npu`` ...), which override
    the codec's predictions.
    """
    _load()
    _require_target(target)
    if role not in ROLES:
        raise LayoutError(f"role must be one of {ROLES}, got {role!r}")
    try:
        dims = tuple(strict_int(d) for d in shape)
    except (TypeError, ValueError) as exc:
        raise LayoutError(f"shape must be a sequence of integers, got {shape!r}") from exc
    if not dims or any(d < 1 for d in dims):
        raise LayoutError(f"shape must have at least one axis, each >= 1; got {dims}")
    try:
        np_dtype = np.dtype(dtype)
    except (TypeError, ValueError, SyntaxError) as exc:
        raise LayoutError(f"unknown dtype {dtype!r}") from exc
    if np_dtype.kind not in "biufc" or np_dtype.fields or np_dtype.subdtype:
        raise LayoutError(
            f"dtype {dtype!r} ({np_dtype.str}) is not a tensor element type: expected bool, "
            "integers or floats"
        )
    if prod(dims) * np_dtype.itemsize > MAX_BUFFER_BYTES:
        raise LayoutError(
            f"shape {list(dims)} of {np_dtype.name} is {prod(dims) * np_dtype.itemsize} bytes, "
            f"more than any NPU buffer ({MAX_BUFFER_BYTES})"
        )
    names = _LAYOUT_NAMES[target]()
    if layout not in names:
        raise LayoutError(f"{target} has no layout {layout!r}; it has: {', '.join(names)}")
    return _BUILDERS[target](target, layout, dims, np_dtype, role, dict(params))
