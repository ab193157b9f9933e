"""The RKNN preflight: a model checked against the input, output and convolution tables before
it is compiled (``npu-hil preflight``; ``npu_hil.harness.preflight`` runs it for the RKNN
targets)."""

from __future__ import annotations

from typing import Any

import numpy as np

from npu_hil.harness.errors import LayoutError, PreflightError
from npu_hil.targets.conv import ConvCheck, ConvSite, check_conv
from npu_hil.targets.onnx_graph import attribute, elem_type_name
from npu_hil.targets.rockchip import observed
from npu_hil.targets.rockchip import tables as rockchip
from npu_hil.targets.rockchip.layouts import input_row_for
from npu_hil.targets.rockchip.operators import measured_operators, refusal
from npu_hil.targets.unit import PreflightContext, PreflightFinding

ROCKCHIP_INPUT_TYPES = ("uint8", "int8", "float16", "float32")


def preflight(report: PreflightContext) -> None:
    layer = report.first_layer or rockchip.default_first_layer(report.target)
    deployed = {v.name: _deployed_type(v, layer, report.input_type) for v in report.inputs}
    _check_inputs(report, layer, deployed)
    _check_outputs(report)
    conv_rule = report.rule or _rule_for_inputs(report, layer, deployed)
    if conv_rule is not None:
        _check_convs(report, conv_rule, layer)
    _check_operators(report)


def _check_operators(report: PreflightContext) -> None:
    """Every node whose operator the compiler refused for the target's platform, measured one
    operator a model (:mod:`npu_hil.targets.rockchip.operators`); the model's operators that
    were not measured are named in a note."""
    target, measured = report.target, measured_operators()
    tried = set(measured["operators"])
    source = measured["provenance"].get("compiler", "the compiler")
    for number, node in enumerate(report.graph.node):
        reason = refusal(target, node.op_type, [a.name for a in node.attribute])
        if reason is None:
            continue
        label = node.name or f"{node.op_type.lower()}_{number}"
        report.findings.append(
            PreflightFinding(
                label,
                "operators",
                False,
                f"{label}: {source} refuses {node.op_type} for {rockchip.platform_of(target)} "
                f"({reason}; measured on a model of that one operator)",
            )
        )
    untried = sorted({node.op_type for node in report.graph.node} - tried)
    if untried:
        report.notes.append(
            f"operators not measured on {source}: {', '.join(untried)} (not checked)"
        )


def _deployed_type(value: Any, layer: str, given: str | None) -> str:
    """The type the compiled model's input takes on the board."""
    if given is not None:
        name = given.lower()
        if name not in ROCKCHIP_INPUT_TYPES:
            raise PreflightError(
                f"--input-type: expected one of {', '.join(ROCKCHIP_INPUT_TYPES)} for a Rockchip "
                f"target, got {given!r}"
            )
        return name
    onnx_type = elem_type_name(value)
    if onnx_type in ("float32", "float64", "float16"):
        # rknn-toolkit2 2.5.0: "default input dtype ... changed from float32 to int8" for a
        # quantized model; a float16 model takes float16 (tests/data/rknn, INPUT_ATTR type).
        return "int8" if layer == "int8" else "float16"
    return onnx_type


def _rule_for_inputs(report: PreflightContext, layer: str, deployed: dict[str, str]) -> str | None:
    """Rule A/B of the input table's width-rule column; None when no input has 1, 3 or 4
    channels (the seed: no width limit for other channel counts). An image-like input whose row
    is missing still gets rule A, the platform's first rule, so the width check always runs."""
    target, shapes = report.target, report.shapes
    image_like = [
        v
        for v in report.inputs
        if len(shapes.get(v.name) or []) == 4 and shapes[v.name][1] in (1, 3, 4)
    ]
    if not image_like:
        report.notes.append(
            "no model input has 1, 3 or 4 channels: the input table sets no convolution width limit"
        )
        return None
    for value in image_like:
        try:
            row, _ = input_row_for(target, layer, 4, np.dtype(deployed[value.name]))
        except LayoutError:
            continue
        if row.width_rule is not None:
            return row.width_rule
    first = rockchip.conv_rules(target)[0].rule
    report.notes.append(
        f"{', '.join(v.name for v in image_like)}: no input row gives a width rule for the "
        f"deployed type; convolutions checked against rule {first}"
    )
    return first


def _check_inputs(report: PreflightContext, layer: str, deployed: dict[str, str]) -> None:
    target = report.target
    for value in report.inputs:
        shape = report.shapes.get(value.name) or []
        dtype = deployed[value.name]
        onnx_type = elem_type_name(value)
        took = dtype if dtype == onnx_type else f"{dtype} (ONNX {onnx_type})"
        try:
            # As the simulated board takes it (int8 on RV1103/RV1106 on the uint8 row; a flat
            # input where the seed lists rank 4 only).
            row, note = input_row_for(target, layer, len(shape), np.dtype(dtype))
        except LayoutError as exc:
            report.findings.append(
                PreflightFinding(value.name, "input table", False, f"{value.name}: {exc.message}")
            )
            continue
        align, seen = 1, None
        if len(shape) == 4 and shape[1] is not None:
            align = row.width_align(shape[1])
            seen = observed.input_width_align(target, row.first_layer, shape[1])
        align_text = f"width aligned to {align} (w_stride)"
        if seen is not None:
            align_text = (
                f"width aligned to {seen[0]} (w_stride; deviation {seen[1]}, the seed says {align})"
            )
        report.findings.append(
            PreflightFinding(
                value.name,
                "input table",
                True,
                f"{value.name}: {took} {shape}, first layer {layer}: {align_text}, mean/scale on "
                f"{row.mean_scale_on}{note}",
            )
        )


def _check_outputs(report: PreflightContext) -> None:
    target, precision = report.target, report.output_precision
    for value in report.graph.output:
        shape = report.shapes.get(value.name) or []
        rows = [
            r
            for r in rockchip.output_rows(target)
            if r.precision in (precision, "any") and r.rank4 == (len(shape) == 4)
        ]
        platform = rockchip.platform_of(target)
        if not rows and len(shape) != 4 and observed.deviation("non4d-outputs").applies_to(target):
            provenance = observed.deviation("non4d-outputs").provenance(target)
            ok = True
            text = (
                f"rank {len(shape)}, flat (UNDEFINE): {platform} lists no output of rank "
                f"{len(shape)}; the compiler builds it (deviation non4d-outputs: {provenance})"
            )
        elif rows:
            layouts = sorted({name for r in rows for name in r.layouts})
            ok, text = True, f"{precision} rank {len(shape)}: layouts {', '.join(layouts)}"
        else:
            ok = False
            text = f"{platform} lists no {precision} output of rank {len(shape)} ({target})"
        report.findings.append(
            PreflightFinding(value.name, "output table", ok, f"{value.name}: {text}")
        )


def _check_convs(report: PreflightContext, rule: str, layer: str) -> None:
    target, graph, shapes = report.target, report.graph, report.shapes
    constants = {init.name for init in graph.initializer}
    graph_inputs = {value.name for value in graph.input if value.name not in constants}
    for number, node in enumerate(graph.node):
        if node.op_type not in ("Conv", "ConvTranspose"):
            continue
        label = node.name or f"{node.op_type.lower()}_{number}"
        in_shape = shapes.get(node.input[0]) or []
        weight = shapes.get(node.input[1]) if len(node.input) > 1 else None
        if len(in_shape) != 4 or in_shape[3] is None:
            report.notes.append(f"{label}: input width unknown, not checked")
            continue
        kernel = attribute(node, "kernel_shape", None, "INTS") or (weight[2:4] if weight else None)
        if not kernel or len(kernel) != 2:
            report.notes.append(f"{label}: not a 2-D convolution, not checked")
            continue
        if kernel[0] is None or kernel[1] is None:  # a weight of symbolic shape
            report.notes.append(f"{label}: kernel size unknown, not checked")
            continue
        dilations = attribute(node, "dilations", [1, 1], "INTS")
        group = int(attribute(node, "group", 1, "INT"))
        channels = in_shape[1]
        if node.op_type == "ConvTranspose":
            kind = "deconv"
        elif group > 1 and group == channels:
            kind = "depthwise"
        else:
            kind = "conv"
        result = check_conv(
            target,
            int(in_shape[3]),
            (int(kernel[0]), int(kernel[1])),
            (int(dilations[0]), int(dilations[1])),
            kind=kind,
            rule=rule,
            first_layer=layer,
            site=ConvSite(
                int(in_shape[2]) if in_shape[2] is not None else None,
                int(channels) if channels is not None else None,
                node.input[0] in graph_inputs,
            ),
        )
        checked = "measured width limit" if result.seed is not None else f"rule {rule}"
        report.findings.append(
            PreflightFinding(label, checked, result.ok, _conv_message(label, target, result))
        )


def _conv_message(label: str, target: str, result: ConvCheck) -> str:
    kind = "" if result.kind == "conv" else f" ({result.kind})"
    if result.seed is not None:  # the compiler's measured limit decided; the seed's beside it
        (measured,) = result.conditions
        seed = "ok" if result.seed.ok else f"fails {', '.join(result.seed.failed)}"
        return f"{label}{kind}: {measured.text}; seed rule {result.seed.rule}: {seed}, {target}"
    dkh, dkw = result.dilated_kernel_hw
    if result.ok:
        return (
            f"{label}: {result.kind} width {result.width}, dilated kernel {dkh}x{dkw}: N = "
            f"{result.n}, rule {result.rule}, {target}: ok"
        )
    failed = [c for c in result.conditions if not c.ok]
    texts = "; ".join(c.text.split(" [")[0] for c in failed)
    which = ", ".join(
        f"{result.rule}{c.name}" if c.name != "N" else f"{result.rule} N" for c in failed
    )
    return f"{label}{kind}: {texts}, rule {which}, {target}"
