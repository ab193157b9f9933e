"""One entry point to every target's tables as readable text (``npu-hil targets show``)."""

from __future__ import annotations

from npu_hil.harness.codec.registry import known_targets
from npu_hil.harness.errors import LayoutError


def tables_text(target: str) -> str:
    from npu_hil.targets import horizon, kl730, rockchip

    if target in kl730.TARGETS:
        return kl730.tables_text(target)
    if target in horizon.TARGETS:
        return horizon.tables_text(target)
    if target in rockchip.TARGETS:
        from npu_hil.targets import rockchip_observed

        return rockchip.tables_text(target) + rockchip_observed.deviations_text(target)
    raise LayoutError(f"unknown target {target!r}; known targets: {', '.join(known_targets())}")


def last_op_kind(target: str, op_type: str, feeders: tuple[str, ...]) -> str:
    """What a target's compiler makes of the op that produces an output (``conv``,
    ``conv_sigmoid`` or ``other``): only RKNN's output padding depends on it."""
    from npu_hil.targets import rockchip, rockchip_observed

    if target in rockchip.TARGETS:
        return rockchip_observed.last_op_kind(target, op_type, feeders)
    return "conv" if op_type in rockchip_observed.CONV_OPS else "other"
