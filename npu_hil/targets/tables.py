"""One entry point to every target's tables as readable text (``npu-hil targets show``), and the
compiler's reading of an output's producing op, each answered by the target's vendor unit."""

from __future__ import annotations

from collections.abc import Iterable

from npu_hil.targets.registry import all_targets, unit_for

CONV_OPS = ("Conv", "ConvTranspose")
"""The ONNX ops every compiler treats as a convolution producing an output."""


def tables_text(target: str) -> str:
    return unit_for(target).tables_text(target)


def last_op_kind(target: str, op_type: str, feeders: tuple[str, ...]) -> str:
    """What a target's compiler makes of the op that produces an output (``conv``,
    ``conv_sigmoid`` or ``other``): only where the vendor's output layout depends on it does
    its unit say more than whether the op is a convolution."""
    hook = unit_for(target).last_op_kind if target in all_targets() else None
    if hook is not None:
        return hook(target, op_type, feeders)
    return "conv" if op_type in CONV_OPS else "other"


def text_table(
    header: tuple[str, ...], rows: Iterable[tuple[str, ...]], *, rule: bool = True
) -> list[str]:
    """``header`` and ``rows`` as fixed-width lines (a rule of dashes under the header)."""
    body = [header, *rows]
    widths = [max(len(row[i]) for row in body) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in body
    ]
    if rule:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return lines
