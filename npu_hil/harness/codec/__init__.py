"""The host codec: logical tensors ↔ the bytes an NPU holds, for every layout in the seeds.

One engine (:mod:`npu_hil.harness.codec.engine`) serves every format; the vendor modules in
``npu_hil/targets/`` describe their formats as data on it. Entry point: :func:`get_layout`.
"""

from __future__ import annotations

from npu_hil.harness.codec.buffers import aligned_empty
from npu_hil.harness.codec.engine import BlockedLayout, Dim
from npu_hil.harness.codec.registry import get_layout, known_targets, layout_names
from npu_hil.harness.errors import LayoutError

__all__ = [
    "BlockedLayout",
    "Dim",
    "LayoutError",
    "aligned_empty",
    "get_layout",
    "known_targets",
    "layout_names",
]
