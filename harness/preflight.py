"""Preflight: check an ONNX model against a target's tables before anything is deployed.

Walks the graph with ONNX shape inference and checks:
- every Conv / ConvTranspose against the convolution width rules (rules A/B of the Rockchip seed,
  with dilated kernels; depthwise when ``group`` equals the input channels). Which rule applies
  comes from the input table: the width-rule column for a model input with 1, 3 or 4 channels,
  "no limit" for other channel counts;
- every model input against the input table (first-layer precision, rank, declared input type)
  and, for Horizon NV12 inputs, even H and W;
- every model output against the output table (precision, rank, layout).

Each finding names the node, the rule and the numbers, e.g.
``conv_17: width 6145 · 3 > 2048 · 9, rule A(1), rk3588``.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_hil.harness.errors import LayoutError, NpuHilError
from npu_hil.harness.inputs import MAX_MODEL_BYTES, read_regular
from npu_hil.targets import check_conv, rockchip
from npu_hil.targets import rockchip_observed as observed
from npu_hil.targets.conv import NO_CONV_LIMIT_TARGETS


class PreflightError(NpuHilError):
    """The model could not be read or analysed (not a rule violation)."""


@dataclass(frozen=True)
class PreflightFinding:
    """One check: ``ok`` False is a violation of ``rule``."""

    node: str
    rule: str
    ok: bool
    message: str


@dataclass
class PreflightReport:
    target: str
    model: str
    findings: list[PreflightFinding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings)

    @property
    def violations(self) -> list[PreflightFinding]:
        return [f for f in self.findings if not f.ok]

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "model": self.model,
            "ok": self.ok,
            "violations": len(self.violations),
            "findings": [dataclasses.asdict(f) for f in self.findings],
            "notes": list(self.notes),
        }

    def summary(self) -> str:
        verdict = "passes" if self.ok else f"violates {len(self.violations)} rule(s)"
        lines = [f"{self.model} on {self.target}: {verdict}"]
        lines += [f"  {f.message}" for f in self.violations]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def preflight(
    model: Any,
    target: str,
    *,
    first_layer: str | None = None,
    output_precision: str = "int8",
    rule: str | None = None,
    input_type: str | None = None,
) -> PreflightReport:
    """Check ``model`` (an ``onnx.ModelProto`` or a path) against ``target``'s tables.

    ``first_layer`` is the precision of the compiled model's first layer (Rockchip: default
    int8, float16 on RK2118); ``output_precision`` the precision of its outputs; ``rule``
    forces rule A or B; ``input_type`` is the type the deployed model's input takes: on
    Rockchip ``uint8``/``int8``/``float16``/``float32`` (default: what rknn-toolkit2 makes of the
    ONNX input: a float input becomes the first layer's type, int8 or float16, as its compiler
    log says; an integer input keeps its type), on Horizon an image type such as ``nv12``.
    """
    proto, name = _load(model)
    try:
        return _analyse(proto, name, target, first_layer, output_precision, rule, input_type)
    except NpuHilError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        # A graph the checks below cannot walk is a model they cannot analyse (exit 2), never
        # a rule it violates (exit 1).
        raise PreflightError(f"{name}: cannot analyse the model ({exc!r})") from None


def _analyse(
    proto: Any,
    name: str,
    target: str,
    first_layer: str | None,
    output_precision: str,
    rule: str | None,
    input_type: str | None,
) -> PreflightReport:
    import onnx

    if not proto.graph.node or not proto.graph.output:
        raise PreflightError(f"{name}: the model has no graph to check (no nodes or no outputs)")
    _check_graph(proto.graph, name)
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except Exception as exc:
        raise PreflightError(f"{name}: ONNX shape inference failed: {exc}") from exc
    graph = inferred.graph
    shapes = _value_shapes(inferred)
    report = PreflightReport(target=target, model=name)
    initializers = {init.name for init in graph.initializer}
    inputs = [i for i in graph.input if i.name not in initializers]
    if target in rockchip.TARGETS:
        layer = first_layer or rockchip.default_first_layer(target)
        deployed = {v.name: _deployed_type(v, layer, input_type) for v in inputs}
        _check_inputs(report, target, inputs, shapes, layer, deployed)
        _check_outputs(report, target, graph.output, shapes, output_precision)
        conv_rule = rule or _rule_for_inputs(report, target, inputs, shapes, layer, deployed)
        if conv_rule is not None:
            _check_convs(report, target, graph, shapes, conv_rule, layer)
    elif target in NO_CONV_LIMIT_TARGETS:
        report.notes.append(f"the seeds give no convolution width limits for {target}")
        if target.startswith("rdk-") and (input_type or "").lower() == "nv12":
            _check_nv12(report, inputs, shapes)
    else:
        raise LayoutError(f"unknown target {target!r}")
    return report


CONV_ATTRIBUTES = {"kernel_shape": "INTS", "dilations": "INTS", "group": "INT"}
"""The convolution attributes the width check reads, with the type ONNX defines for each."""


@functools.cache
def _numeric_elem_types() -> frozenset[int]:
    import onnx

    kinds = "biuf"
    numeric = set()
    for code in onnx.TensorProto.DataType.values():
        try:
            dtype = onnx.helper.tensor_dtype_to_np_dtype(code)
        except (KeyError, ValueError, TypeError):
            continue
        if dtype.kind in kinds:
            numeric.add(int(code))
    return frozenset(numeric)


def _check_graph(graph: Any, name: str) -> None:
    """Every value a node reads is made somewhere: a graph input, an initializer or an earlier
    node's output (the ONNX rule of a topologically sorted graph). A graph that breaks it cannot
    be walked, and is not a model that violates a rule."""
    import onnx

    initializers = {init.name for init in graph.initializer}
    weights = {init.name: list(init.dims) for init in graph.initializer}
    known = {value.name for value in graph.input} | initializers
    for value in graph.input:
        elem = value.type.tensor_type.elem_type if value.type.HasField("tensor_type") else 0
        if value.name not in initializers and elem not in _numeric_elem_types():
            codes = onnx.TensorProto.DataType.values()
            name_of = onnx.TensorProto.DataType.Name(elem) if elem in codes else str(elem)
            raise PreflightError(
                f"{name}: input {value.name!r} is not a numeric tensor (element type {name_of})"
            )
    for number, node in enumerate(graph.node):
        if node.op_type in ("Conv", "ConvTranspose"):
            values = {a: _attribute(node, a, None, kind) for a, kind in CONV_ATTRIBUTES.items()}
            weight = weights.get(node.input[1]) if len(node.input) > 1 else None
            spatial = len(weight) - 2 if weight is not None else None
            for key in ("kernel_shape", "dilations"):
                given = values[key]
                if given is not None and spatial is not None and len(given) != spatial:
                    raise PreflightError(
                        f"{name}: {node.name or node.op_type}: {key} {list(given)} does not fit "
                        f"a weight of {spatial} spatial axes"
                    )
        for value in node.input:
            if value and value not in known:
                label = node.name or f"{node.op_type.lower()}_{number}"
                raise PreflightError(
                    f"{name}: {label} reads {value!r}, which no graph input, initializer or "
                    "earlier node makes"
                )
        known.update(node.output)


def _load(model: Any) -> tuple[Any, str]:
    import onnx

    if isinstance(model, str | Path):
        path = Path(model)
        data = read_regular(path, "an ONNX model (.onnx)", MAX_MODEL_BYTES)
        try:
            proto = onnx.load_model_from_string(bytes(data))
        except Exception as exc:  # protobuf's DecodeError and friends
            raise PreflightError(f"{path}: not an ONNX model ({type(exc).__name__})") from None
        if any(init.data_location == onnx.TensorProto.EXTERNAL for init in proto.graph.initializer):
            raise PreflightError(
                f"{path}: the model keeps its weights in external files; preflight reads one "
                "self-contained .onnx file"
            )
        return proto, path.name
    if isinstance(model, onnx.ModelProto):
        return model, model.graph.name or "model"
    raise PreflightError(f"expected an ONNX model or a path, got {type(model).__name__}")


def _value_shapes(model: Any) -> dict[str, list[int | None]]:
    """Static shapes of every value the inference could resolve (None for symbolic dims)."""
    shapes: dict[str, list[int | None]] = {}
    graph = model.graph
    for value in [*graph.input, *graph.value_info, *graph.output]:
        tensor = value.type.tensor_type
        if not tensor.HasField("shape"):
            continue
        shapes[value.name] = [
            d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim
        ]
    for init in graph.initializer:
        shapes[init.name] = list(init.dims)
    return shapes


def _elem_type_name(value: Any) -> str:
    import onnx

    return str(onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type).name)


ROCKCHIP_INPUT_TYPES = ("uint8", "int8", "float16", "float32")


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
    onnx_type = _elem_type_name(value)
    if onnx_type in ("float32", "float64", "float16"):
        # rknn-toolkit2 2.5.0: "default input dtype ... changed from float32 to int8" for a
        # quantized model; a float16 model takes float16 (tests/data/rknn, INPUT_ATTR type).
        return "int8" if layer == "int8" else "float16"
    return onnx_type


def _input_row(target: str, layer: str, rank: int, deployed: str) -> tuple[rockchip.InputRow, str]:
    """The input table's row for the deployed type (int8 on RV1103/RV1106 takes the uint8 row,
    as Rockchip's software does: deviation int8-default-input)."""
    kind = rockchip.input_type_of(deployed)
    try:
        return rockchip.input_row(target, first_layer=layer, rank=rank, input_type=kind), ""
    except LayoutError:
        if not (kind == "int8" and observed.int8_input_uses_uint8_row(target)):
            raise
    row = rockchip.input_row(target, first_layer=layer, rank=rank, input_type="uint8")
    return row, " (int8 takes the uint8 row: deviation int8-default-input)"


def _rule_for_inputs(
    report: PreflightReport,
    target: str,
    inputs: list[Any],
    shapes: dict[str, Any],
    layer: str,
    deployed: dict[str, str],
) -> str | None:
    """Rule A/B of the input table's width-rule column; None when no input has 1, 3 or 4
    channels (the seed: no width limit for other channel counts). An image-like input whose row
    is missing still gets rule A, the platform's first rule, so the width check always runs."""
    image_like = [
        v for v in inputs if len(shapes.get(v.name) or []) == 4 and shapes[v.name][1] in (1, 3, 4)
    ]
    if not image_like:
        report.notes.append(
            "no model input has 1, 3 or 4 channels: the input table sets no convolution width limit"
        )
        return None
    for value in image_like:
        try:
            row, _ = _input_row(target, layer, 4, deployed[value.name])
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


def _check_inputs(
    report: PreflightReport,
    target: str,
    inputs: list[Any],
    shapes: dict[str, Any],
    layer: str,
    deployed: dict[str, str],
) -> None:
    for value in inputs:
        shape = shapes.get(value.name) or []
        dtype = deployed[value.name]
        onnx_type = _elem_type_name(value)
        took = dtype if dtype == onnx_type else f"{dtype} (ONNX {onnx_type})"
        try:
            row, note = _input_row(target, layer, len(shape), dtype)
        except LayoutError as exc:
            report.findings.append(
                PreflightFinding(value.name, "input table", False, f"{value.name}: {exc.message}")
            )
            continue
        channels = shape[1] if len(shape) == 4 else None
        align = row.width_align(channels) if channels is not None else 1
        seen = (
            observed.input_width_align(target, row.first_layer, channels)
            if channels is not None
            else None
        )
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


def _check_outputs(
    report: PreflightReport, target: str, outputs: Any, shapes: dict[str, Any], precision: str
) -> None:
    for value in outputs:
        shape = shapes.get(value.name) or []
        rows = [
            r
            for r in rockchip.output_rows(target)
            if r.precision in (precision, "any") and r.rank4 == (len(shape) == 4)
        ]
        if rows:
            layouts = sorted({name for r in rows for name in r.layouts})
            report.findings.append(
                PreflightFinding(
                    value.name,
                    "output table",
                    True,
                    f"{value.name}: {precision} rank {len(shape)}: layouts {', '.join(layouts)}",
                )
            )
        else:
            report.findings.append(
                PreflightFinding(
                    value.name,
                    "output table",
                    False,
                    f"{value.name}: {rockchip.platform_of(target)} lists no {precision} output of "
                    f"rank {len(shape)} ({target})",
                )
            )


def _attribute(node: Any, name: str, default: Any, kind: str) -> Any:
    """The attribute's value, of the type the operator defines (``INT`` or ``INTS``)."""
    import onnx

    for attribute in node.attribute:
        if attribute.name == name:
            if attribute.type != getattr(onnx.AttributeProto, kind):
                got = onnx.AttributeProto.AttributeType.Name(attribute.type)
                raise PreflightError(
                    f"{node.name or node.op_type}: attribute {name} must be {kind}, got {got}"
                )
            return onnx.helper.get_attribute_value(attribute)
    return default


def _check_convs(
    report: PreflightReport,
    target: str,
    graph: Any,
    shapes: dict[str, Any],
    rule: str,
    layer: str,
) -> None:
    for number, node in enumerate(graph.node):
        if node.op_type not in ("Conv", "ConvTranspose"):
            continue
        label = node.name or f"{node.op_type.lower()}_{number}"
        in_shape = shapes.get(node.input[0]) or []
        weight = shapes.get(node.input[1]) if len(node.input) > 1 else None
        if len(in_shape) != 4 or in_shape[3] is None:
            report.notes.append(f"{label}: input width unknown, not checked")
            continue
        kernel = _attribute(node, "kernel_shape", None, "INTS") or (weight[2:4] if weight else None)
        if not kernel or len(kernel) != 2:
            report.notes.append(f"{label}: not a 2-D convolution, not checked")
            continue
        dilations = _attribute(node, "dilations", [1, 1], "INTS")
        group = int(_attribute(node, "group", 1, "INT"))
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
        )
        report.findings.append(
            PreflightFinding(label, f"rule {rule}", result.ok, _conv_message(label, target, result))
        )


def _conv_message(label: str, target: str, result: Any) -> str:
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
    kind = "" if result.kind == "conv" else f" ({result.kind})"
    return f"{label}{kind}: {texts}, rule {which}, {target}"


def _check_nv12(report: PreflightReport, inputs: list[Any], shapes: dict[str, Any]) -> None:
    for value in inputs:
        shape = shapes.get(value.name) or []
        if len(shape) != 4:
            continue
        h, w = (shape[1], shape[2]) if shape[3] in (1, 3) else (shape[2], shape[3])
        ok = h is not None and w is not None and h % 2 == 0 and w % 2 == 0
        report.findings.append(
            PreflightFinding(
                value.name,
                "NV12 even H and W",
                ok,
                f"{value.name}: NV12 input {h}x{w}"
                + ("" if ok else ": H and W must be even (seeds/003)"),
            )
        )
