"""The host codec: logical tensors ↔ the bytes an NPU holds, for every layout in the seeds.

One engine (:mod:`npu_hil.harness.codec.engine`) serves every format; the vendor modules in
``npu_hil/targets/`` describe their formats as data on it. Entry point: :func:`get_layout`.
"""

from __future__ import annotations

from npu_hil.harness.codec.buffers import aligned_empty, aligned_zeros, is_aligned
from npu_hil.harness.codec.engine import BlockedLayout, Dim, Location
from npu_hil.harness.codec.registry import get_layout, known_targets, layout_names
from npu_hil.harness.errors import LayoutError

Layout = BlockedLayout

__all__ = [
    "BlockedLayout",
    "Dim",
    "Layout",
    "LayoutError",
    "Location",
    "aligned_empty",
    "aligned_zeros",
    "get_layout",
    "is_aligned",
    "known_targets",
    "layout_names",
]
