"""The codec layout of a tensor as a runtime reported it, so the host unpacks with what the device
says: each vendor unit's :class:`~npu_hil.harness.codec.registry.ReportReader` reads its runtime's
fields. Pass ``shape`` where the report does not determine it; :func:`predicted_layout` is the
other side of :func:`npu_hil.harness.diff.attributes.diff_attributes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.codec.registry import report_reader
from npu_hil.harness.errors import LayoutError


def layout_from_report(
    target: str,
    role: str,
    attributes: Mapping[str, Any],
    dtype: Any = None,
    *,
    shape: tuple[int, ...] | list[int] | None = None,
) -> BlockedLayout:
    """The layout a runtime's report describes, built with the device's own geometry."""
    return _build(target, role, attributes, dtype, shape, reported=True, params={})


def predicted_layout(
    target: str,
    role: str,
    attributes: Mapping[str, Any],
    dtype: Any = None,
    *,
    shape: tuple[int, ...] | list[int] | None = None,
    **params: Any,
) -> BlockedLayout:
    """The codec's prediction for the tensor the report describes: its layout, shape and dtype,
    but the strides, sizes and blocks from the seed tables. ``params`` are the model's knobs
    the report does not carry (the vendor's layout parameters)."""
    return _build(target, role, attributes, dtype, shape, reported=False, params=params)


def dtype_from_report(target: str, attributes: Mapping[str, Any]) -> np.dtype:
    """The element type of the reported buffer."""
    return report_reader(target).dtype(target, attributes)


def _build(
    target: str,
    role: str,
    attributes: Mapping[str, Any],
    dtype: Any,
    shape: tuple[int, ...] | list[int] | None,
    *,
    reported: bool,
    params: Mapping[str, object],
) -> BlockedLayout:
    reader = report_reader(target)
    if not isinstance(attributes, Mapping):
        raise LayoutError(f"{target}: attributes must be a mapping, got {attributes!r}")
    kind = np.dtype(dtype) if dtype is not None else reader.dtype(target, attributes)
    logical = tuple(int(d) for d in shape) if shape is not None else None
    return reader.layout(target, role, attributes, kind, logical, reported=reported, params=params)


def require_field(attributes: Mapping[str, Any], key: str, where: str) -> Any:
    """``attributes[key]``, or a LayoutError naming the fields the report has."""
    if key not in attributes:
        raise LayoutError(f"{where}: the report has no {key!r} (fields: {', '.join(attributes)})")
    return attributes[key]
