"""The one registry from target names to the vendor code that builds their layouts and reads
their reports. The vendor units (``npu_hil/targets/``) import the codec, not the reverse: the
first lookup loads them all through :data:`VENDOR_LOADER`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from math import prod
from typing import Any, Protocol

import numpy as np

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.codec.params import MAX_BUFFER_BYTES, strict_int
from npu_hil.harness.errors import LayoutError

ROLES = ("input", "output")

VENDOR_LOADER = "npu_hil.targets.registry"
"""The module whose ``load_vendors()`` registers every vendor unit (each through :func:`register`);
named, not imported, because the units sit above the codec."""


class LayoutBuilder(Protocol):
    """Builds the layout ``name`` of ``target`` for a logical tensor."""

    def __call__(
        self,
        target: str,
        name: str,
        shape: tuple[int, ...],
        dtype: np.dtype,
        role: str,
        params: Mapping[str, object],
    ) -> BlockedLayout:
        """``params``: the caller's and the device's knobs, each checked where it is read."""


class ReportReader(Protocol):
    """Reads one vendor's tensor report (the runtime's own field names) into a codec layout."""

    def dtype(self, target: str, attributes: Mapping[str, Any]) -> np.dtype:
        """The element type of the reported buffer."""

    def layout(
        self,
        target: str,
        role: str,
        attributes: Mapping[str, Any],
        dtype: np.dtype,
        shape: tuple[int, ...] | None,
        *,
        reported: bool,
        params: Mapping[str, object],
    ) -> BlockedLayout:
        """The layout the report describes: with the device's geometry (``reported``) or the
        codec's prediction for the same tensor; ``params`` are knobs the report lacks (checked
        by the layout builder they go to)."""


_BUILDERS: dict[str, LayoutBuilder] = {}
_READERS: dict[str, ReportReader] = {}
_LAYOUT_NAMES: dict[str, Callable[[], tuple[str, ...]]] = {}
_ALL_LOADED: list[bool] = []


def register(
    targets: tuple[str, ...],
    builder: LayoutBuilder,
    layouts: Callable[[], tuple[str, ...]],
    report: ReportReader | None = None,
) -> None:
    """Called by a vendor unit for the targets it serves."""
    for target in targets:
        _BUILDERS[target] = builder
        _LAYOUT_NAMES[target] = layouts
        if report is not None:
            _READERS[target] = report


def _load() -> None:
    # Every vendor unit, even when one was imported directly first and registered alone.
    if not _ALL_LOADED:
        _ALL_LOADED.append(True)  # before the import: a unit may look itself up while loading
        try:
            importlib.import_module(VENDOR_LOADER).load_vendors()
        except BaseException:
            _ALL_LOADED.clear()
            raise


def known_targets() -> tuple[str, ...]:
    _load()
    return tuple(_BUILDERS)


def layout_names(target: str) -> tuple[str, ...]:
    """The layout names ``target`` knows (for both roles)."""
    _load()
    _require_target(target)
    return _LAYOUT_NAMES[target]()


def unregister(targets: tuple[str, ...]) -> None:
    """Forget ``targets`` (a vendor unit registered for a while, by a test)."""
    for target in targets:
        _BUILDERS.pop(target, None)
        _LAYOUT_NAMES.pop(target, None)
        _READERS.pop(target, None)


def report_reader(target: str) -> ReportReader:
    """The reader of ``target``'s tensor reports."""
    _load()
    _require_target(target)
    if target not in _READERS:
        raise LayoutError(f"{target}: its vendor unit has no reader for the runtime's reports")
    return _READERS[target]


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
