"""Preflight: an ONNX model against a target's tables before anything is deployed
(:func:`preflight`; the checks themselves are the vendor units'), or a compiled model against a
board of the target (docs/model-developer/preflight.md). A graph that cannot be walked is a model
that cannot be analysed (exit 2), never one that violates a rule."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from typing_extensions import TypedDict

from npu_hil.harness.errors import ArtifactError, NpuHilError, PreflightError
from npu_hil.harness.files import MAX_MODEL_BYTES, read_regular
from npu_hil.targets.artifact import read_artifact, reader_for
from npu_hil.targets.compatibility import check_compatibility
from npu_hil.targets.onnx_graph import attribute
from npu_hil.targets.registry import unit_for
from npu_hil.targets.unit import PreflightContext, PreflightFinding

__all__ = ["PreflightError", "preflight"]


class FindingDocument(TypedDict):
    """One :class:`PreflightFinding` in a :class:`PreflightDocument`."""

    node: str
    rule: str
    ok: bool
    message: str


class PreflightDocument(TypedDict):
    """:meth:`PreflightReport.to_dict`: what ``npu-hil preflight --json`` prints."""

    target: str
    model: str
    ok: bool
    checked: bool
    violations: int
    findings: list[FindingDocument]
    notes: list[str]


@dataclass
class PreflightReport:
    target: str
    model: str
    findings: list[PreflightFinding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    checked: bool = True
    """False when the target's vendor has no rule table to check a model against."""

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings)

    @property
    def violations(self) -> list[PreflightFinding]:
        return [f for f in self.findings if not f.ok]

    def to_dict(self) -> PreflightDocument:
        return {
            "target": self.target,
            "model": self.model,
            "ok": self.ok,
            "checked": self.checked,
            "violations": len(self.violations),
            "findings": [cast(FindingDocument, dataclasses.asdict(f)) for f in self.findings],
            "notes": list(self.notes),
        }

    def summary(self) -> str:
        if not self.ok:
            verdict = f"violates {len(self.violations)} rule(s)"
        elif not self.checked:
            verdict = f"not checked: no rule of {self.target}'s tables applies to this model"
        else:
            verdict = f"passes ({len(self.findings)} checks)"
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
    board_versions: Mapping[str, Any] | None = None,
) -> PreflightReport:
    """Check ``model`` (an ``onnx.ModelProto`` or a path) against ``target``'s tables, or a
    compiled model of the target's vendor for compatibility (:func:`preflight_artifact`); the
    keywords are the options of ``npu-hil preflight``."""
    if isinstance(model, str | Path) and reader_for(model, target) is not None:
        return preflight_artifact(model, target, board_versions)
    proto, name = _load(model)
    try:
        return _analyse(proto, name, target, first_layer, output_precision, rule, input_type)
    except NpuHilError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        # A graph the checks below cannot walk is a model they cannot analyse (exit 2), never
        # a rule it violates (exit 1).
        raise PreflightError(f"{name}: cannot analyse the model ({exc!r})") from None


def preflight_artifact(
    path: str | Path, target: str, board_versions: Mapping[str, Any] | None = None
) -> PreflightReport:
    """The compiled model at ``path`` against a board of ``target``: one finding per
    compatibility check (rule ``compatibility``; only a refusal is a violation, an unknown
    version is reported as such). Without ``board_versions`` the runtime is unknown."""
    try:
        info = read_artifact(path, target)
    except ArtifactError as exc:
        # A file that is not what its suffix claims cannot be analysed (exit 2).
        raise PreflightError(exc.message) from None
    report = PreflightReport(target=target, model=Path(path).name)
    if info is None:
        raise PreflightError(f"{path}: not a compiled model of {target}'s vendor")
    findings = check_compatibility(info, target, board_versions or {})
    for found in findings:
        report.findings.append(
            PreflightFinding(
                node=info.name,
                rule="compatibility",
                ok=found.status != "refuse",
                message=f"{found.check}: {found.status}: {found.message}"
                + (f" [{found.source}]" if found.source and found.status != "ok" else ""),
            )
        )
    built = ", ".join(info.target_platforms) or "no platform named"
    report.notes.append(
        f"{info.name}: {info.format} format {info.format_version}, toolkit "
        f"{info.toolkit_version or 'unknown'}, built for {built}"
    )
    report.notes.extend(f"not read: {what}" for what in info.unverified)
    report.notes.extend(
        f"{f.check} {f.status}: {f.message}" for f in findings if f.status in ("warn", "unknown")
    )
    return report


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
    unit = unit_for(target)
    context = PreflightContext(
        target, graph, shapes, inputs, first_layer, output_precision, rule, input_type
    )
    _check_static_shapes(context, inputs)
    check = unit.preflight
    if check is None:
        report.checked = False
        context.notes.append(
            f"the seeds give no convolution width limits for {target}, nor input or output "
            "tables to check against"
        )
    else:
        before = len(context.findings)
        check(context)
        # A vendor check that found nothing to check says so, never "passes".
        report.checked = len(context.findings) > before
    report.findings.extend(context.findings)
    report.notes.extend(context.notes)
    return report


def _check_static_shapes(context: PreflightContext, inputs: list[Any]) -> None:
    """Every input dimension a fixed positive size: the vendors' compilers build static shapes
    only (rknn-toolkit2 refuses a dynamic batch; so does the simulated board)."""
    for value in inputs:
        dims = value.type.tensor_type.shape.dim
        loose = [
            (axis, d.dim_param or "?")
            for axis, d in enumerate(dims)
            if not (d.HasField("dim_value") and d.dim_value > 0)
        ]
        if loose:
            axis, symbol = loose[0]
            shape = [d.dim_value if d.HasField("dim_value") else d.dim_param or "?" for d in dims]
            context.findings.append(
                PreflightFinding(
                    value.name,
                    "static shapes",
                    False,
                    f"{value.name}: dimension {axis} is symbolic ({symbol!r} in {shape}); the "
                    "compilers need a fixed size (export with a fixed batch, e.g. 1)",
                )
            )


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

    weights = {init.name: list(init.dims) for init in graph.initializer}
    known = {value.name for value in graph.input} | weights.keys()
    for value in graph.input:
        elem = value.type.tensor_type.elem_type if value.type.HasField("tensor_type") else 0
        if value.name not in weights and elem not in _numeric_elem_types():
            codes = onnx.TensorProto.DataType.values()
            name_of = onnx.TensorProto.DataType.Name(elem) if elem in codes else str(elem)
            raise PreflightError(
                f"{name}: input {value.name!r} is not a numeric tensor (element type {name_of})"
            )
    for number, node in enumerate(graph.node):
        if node.op_type in ("Conv", "ConvTranspose"):
            values = {a: attribute(node, a, None, kind) for a, kind in CONV_ATTRIBUTES.items()}
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
