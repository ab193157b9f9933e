"""The Rockchip seed tables of one target as fixed-width text (``npu-hil targets show``)."""

from __future__ import annotations

from npu_hil.harness.errors import LayoutError
from npu_hil.targets.rockchip.convolution import c2_default, conv_rules
from npu_hil.targets.rockchip.tables import PRECISIONS, input_rows, output_rows, platform_of
from npu_hil.targets.tables import text_table


def _align_text(value: int) -> str:
    return "none" if value == 1 else f"x{value}"


def tables_text(target: str) -> str:
    """The target's input, output and convolution tables as fixed-width text."""
    platform = platform_of(target)
    lines = [f"{target}: RKNN2 V2.5.0 table group {platform} (zero-copy API)", "", "Inputs"]
    lines += text_table(
        (
            "first layer",
            "rank",
            "input type",
            "mean/scale/quant",
            "w-align C=1,3,4",
            "w-align other C",
            "width rule C=1,3,4",
        ),
        (
            (
                row.first_layer,
                "4" if row.rank4 else "not 4",
                row.input_types_text(),
                row.mean_scale_on,
                str(row.width_align_c134),
                str(row.width_align_other),
                row.width_rule or "none",
            )
            for row in input_rows(target)
        ),
    )
    lines.append("(other channel counts: no width limit)")
    lines += ["", "Convolution width limits (K = dkh*dkw, dkh = dilated kernel height)"]
    lines += text_table(
        ("rule", "(1)", "(2)", "conv N", "depthwise N", "deconv N"),
        (
            (
                rule.rule,
                rule.condition1_text(),
                f"width <= {rule.max_width}",
                rule.conv.text(),
                rule.depthwise.text(),
                rule.deconv.text(),
            )
            for rule in conv_rules(target)
        ),
    )
    lines += ["", "Outputs"]
    lines += text_table(
        ("precision", "rank", "layout", "C-align last conv", "C-align other", "HW-align"),
        (
            (
                row.precision,
                "4" if row.rank4 else "not 4",
                row.layouts_text(),
                _align_text(row.channel_align_conv),
                _align_text(row.channel_align_other),
                _align_text(row.hw_align),
            )
            for row in output_rows(target)
        ),
    )
    c2_lines = []
    for precision in PRECISIONS:
        try:
            c2, source = c2_default(target, precision)
        except LayoutError:
            continue
        c2_lines.append(f"  {precision}: C2 = {c2} ({source})")
    if c2_lines:
        lines += ["", "NC1HWC2 block C2 (prediction; the device's reported native dims win)"]
        lines += c2_lines
    return "\n".join(lines) + "\n"
