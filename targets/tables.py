"""One entry point to every target's tables as readable text (``npu-hil targets show``)."""

from __future__ import annotations

from harness.codec.registry import known_targets
from harness.errors import LayoutError


def tables_text(target: str) -> str:
    from targets import horizon, kl730, rockchip

    if target in kl730.TARGETS:
        return kl730.tables_text(target)
    if target in horizon.TARGETS:
        return horizon.tables_text(target)
    if target in rockchip.TARGETS:
        return rockchip.tables_text(target)
    raise LayoutError(f"unknown target {target!r}; known targets: {', '.join(known_targets())}")
