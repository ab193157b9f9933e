"""Run one model on a board and check every device buffer: pack → deploy → run → fetch → diff.

The expectation is computed on the host from what the device *reported* (its layouts, strides and
quantization parameters, :mod:`harness.sim.expect`), never from the simulator's internals, so the
same code checks a simulated board and a real one. Every input and output buffer is diffed byte
for byte (:func:`harness.diff.diff_buffers`) and every reported attribute is compared with the
codec's prediction (:func:`harness.diff.attributes.diff_attributes`). Attribute disagreements are
findings in the report, not failures: the bytes decide (DESIGN: predictions vs what the device
says).

Errors are not caught here: TransportError, DeviceError and LayoutError reach the caller, which
maps them onto outcomes (error, error, failure before anything was sent). Each run feeds the
board's circuit breaker (:mod:`harness.farm.breaker`): the run whose infrastructure failure opens
it raises :class:`~harness.farm.breaker.BoardBrokenError` (from that failure), and so does every
later run on the board, at once.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from npu_hil.harness.agent.protocol import InputSpec, JobSpec, Result, TensorRecord
from npu_hil.harness.codec import BlockedLayout, get_layout
from npu_hil.harness.codec.reported import predicted_layout
from npu_hil.harness.diff import DiffReport, diff_buffers
from npu_hil.harness.diff.attributes import AttributeFinding, diff_attributes, disagreements
from npu_hil.harness.diff.heatmap import render_heatmap
from npu_hil.harness.errors import LayoutError
from npu_hil.harness.expect import Expected, expect_run
from npu_hil.harness.farm.breaker import INFRA_FAILURES, BoardBrokenError, CircuitBreaker
from npu_hil.harness.farm.session import BoardSession
from npu_hil.harness.folders import private_dir
from npu_hil.harness.models import MODELS, Manifest, ManifestError, build
from npu_hil.targets import last_op_kind
from npu_hil.targets.registry import pass_through_adapters, unit_for, unit_named

__all__ = ["ModelRun", "TensorRun", "run_model"]



@dataclass(frozen=True)
class TensorRun:
    """One device buffer of a run and its verdict."""

    name: str
    role: str
    diff: DiffReport
    attributes: tuple[AttributeFinding, ...]
    data: np.ndarray = field(repr=False)
    reported: Mapping[str, Any]
    layout: BlockedLayout = field(repr=False)
    heatmap: Path | None = None

    @property
    def ok(self) -> bool:
        return self.diff.ok

    @property
    def disagreements(self) -> list[AttributeFinding]:
        """Attributes the device reported differently from the codec's prediction."""
        return disagreements(list(self.attributes))


@dataclass(frozen=True)
class ModelRun:
    """A model run on one board: every input and output buffer diffed, with provenance."""

    ok: bool
    simulated: bool
    board: str
    target: str
    model: str
    adapter: str
    inputs: tuple[TensorRun, ...]
    outputs: tuple[TensorRun, ...]
    versions: Mapping[str, Any]
    artifact_hashes: Mapping[str, str]
    fallback_reason: str | None = None
    timings: Mapping[str, float] = field(default_factory=dict)

    @property
    def tensors(self) -> tuple[TensorRun, ...]:
        return self.inputs + self.outputs

    def tensor(self, name: str, role: str | None = None) -> TensorRun:
        for tensor in self.tensors:
            if tensor.name == name and role in (None, tensor.role):
                return tensor
        names = [t.name for t in self.tensors if role in (None, t.role)]
        kind = f"{role} " if role else ""
        raise KeyError(f"no {kind}tensor {name!r}; the run has {names}")

    def output(self, name: str, *, dequantize: bool = False) -> np.ndarray:
        """The model output ``name`` as a tensor: the device buffer unpacked with the layout the
        run used (the stored integers of a quantized model), or with ``dequantize=True`` the
        float values by the quantization the runtime reported. :attr:`outputs` keeps the raw
        buffers, attributes and diffs as evidence."""
        return self._decoded(name, "output", dequantize)

    def input(self, name: str, *, dequantize: bool = False) -> np.ndarray:
        """The model input ``name`` as the device held it (read back from its input buffer),
        decoded the way :meth:`output` decodes an output."""
        return self._decoded(name, "input", dequantize)

    def _decoded(self, name: str, role: str, dequantize: bool) -> np.ndarray:
        from npu_hil.harness.farm.decode import dequantize as to_float

        tensor = self.tensor(name, role)
        values = np.asarray(tensor.layout.unpack(tensor.data))
        if not dequantize:
            return values
        return to_float(values, tensor.reported, f"{self.board} {role} {name!r}")

    def summary(self) -> str:
        """A few lines: the first failing tensor's diff summary first, then the verdict line."""
        where = "simulated" if self.simulated else "hardware"
        if self.fallback_reason:
            where += f", fallback: {self.fallback_reason}"
        head = (
            f"{self.model} on {self.board} ({self.target}, {where}): "
            f"{'ok' if self.ok else 'FAILED'}"
        )
        failing = [t for t in self.tensors if not t.ok]
        lines = [failing[0].diff.summary(), head] if failing else [head]
        for tensor in failing[1:]:
            lines.append(f"  also different: {tensor.role} {tensor.name} ({tensor.diff.verdict})")
        for tensor in self.tensors:
            for finding in tensor.disagreements:
                lines.append(f"  attribute {tensor.role} {tensor.name}: {finding.message}")
            if tensor.heatmap is not None:
                lines.append(f"  heatmap: {tensor.heatmap}")
        return "\n".join(lines)


def run_model(
    session: BoardSession,
    model: str | os.PathLike[str] | onnx.ModelProto,
    inputs: Mapping[str, np.ndarray],
    *,
    outputs: Sequence[str] | None = None,
    tolerance: float | None = None,
    padding: str = "zero",
    input_layout: str | Mapping[str, str] | None = None,
    faults: Sequence[Any] | None = None,
    reports_dir: str | os.PathLike[str] | None = None,
) -> ModelRun:
    """Run ``model`` on the session's board with ``inputs`` (name → logical NCHW array).

    ``model``: a reference-model name (built for the first input's shape), an ONNX path or an
    ``onnx.ModelProto``; on real hardware the compiled artifact comes from the manifest.
    ``tolerance`` (quantized units) and ``padding`` are the diff's; ``input_layout`` names the
    native input layout (one for all inputs, or per input); ``faults`` go to a simulated board
    (``{"name": "dirty-padding"}``); ``reports_dir`` receives a heatmap per failing tensor.
    """
    if not inputs:
        raise LayoutError("run_model: no inputs given")
    if faults and not session.simulated:
        raise LayoutError(
            f"run_model: {session.name} is real hardware; faults can only be injected into a "
            "simulated board"
        )
    given = {name: np.ascontiguousarray(value) for name, value in inputs.items()}
    reference, deployed, label = _resolve_model(session, model, given)
    options = dict(session.adapter_options)
    if faults:
        options["faults"] = list(faults)
    specs, arrays = _inputs(session, given, input_layout)
    spec = JobSpec(
        job_id=f"{session.name}-{label}-{uuid.uuid4().hex[:8]}",
        adapter=session.adapter,
        model=deployed,
        inputs=specs,
        outputs=None if outputs is None else tuple(outputs),
        adapter_options=options,
        load_timeout_s=session.board.timeouts.load,
        run_timeout_s=session.board.timeouts.run,
    )
    breaker = session.breaker
    if breaker is not None:
        breaker.check()  # a board marked unhealthy costs nothing more
    try:
        result = session.client.submit(spec, arrays)
        result.raise_for_errors()
    except Exception as exc:
        if breaker is not None:
            _feed_breaker(breaker, session.name, exc)
        raise
    if breaker is not None:
        breaker.succeeded()
    # The logical shapes are the model's: a runtime may give its tensors' native dims instead
    # (rknn_native: NC1HWC2 [N, C1, H, W, C2]), which the attributes carry anyway.
    logical = {**_output_shapes(reference), **{k: v.shape for k, v in given.items()}}
    expected_in, expected_out = expect_run(
        session.target,
        reference,
        given,
        [_Reported.of(t, logical) for t in result.inputs],
        [_Reported.of(t, logical) for t in result.outputs],
    )
    check = _Checker(
        target=session.target,
        last_ops=_last_ops(reference, session.target),
        tolerance=tolerance or 0.0,
        padding=padding,
        reports_dir=Path(reports_dir) if reports_dir is not None else None,
        job_id=spec.job_id,
    )
    checked_in = [check(record, e) for record, e in zip(result.inputs, expected_in, strict=True)]
    checked_out = [check(record, e) for record, e in zip(result.outputs, expected_out, strict=True)]
    hashes = {deployed.name: _sha256(deployed)}
    if deployed != reference:
        hashes[reference.name] = _sha256(reference)
    return ModelRun(
        ok=all(t.ok for t in (*checked_in, *checked_out)),
        simulated=session.simulated,
        board=session.name,
        target=session.target,
        model=label,
        adapter=session.adapter,
        inputs=tuple(checked_in),
        outputs=tuple(checked_out),
        versions=dict(result.versions),
        artifact_hashes=hashes,
        fallback_reason=session.fallback_reason,
        timings=_timings(result),
    )


def _feed_breaker(breaker: CircuitBreaker, board: str, exc: Exception) -> None:
    """Count an infrastructure failure (BoardBrokenError from it when it opened the breaker);
    any other error came from a board that answered, which ends a run of failures."""
    if not isinstance(exc, INFRA_FAILURES):
        breaker.succeeded()
    elif breaker.failed(exc):
        raise BoardBrokenError(
            breaker.opened or "", board=board, cause=breaker.failures[-1]
        ) from exc


# --- the model ----------------------------------------------------------------------------------


def _resolve_model(
    session: BoardSession,
    model: str | os.PathLike[str] | onnx.ModelProto,
    given: Mapping[str, np.ndarray],
) -> tuple[Path, Path, str]:
    """(reference ONNX on this machine, what the board loads, a label). A simulated board loads
    the reference itself; a real one the compiled artifact the manifest lists for its target,
    and then the reference is the ONNX that artifact was compiled from."""
    if not session.simulated and isinstance(model, str) and model in _manifest(session).models:
        entry = _manifest(session).model(model)
        return entry.require_onnx(), entry.require_artifact(session.target), model
    reference, label = _reference_model(session, model, given)
    if session.simulated:
        return reference, reference, label
    manifest = _manifest(session)
    # `npu-hil models build` lists each reference model once per shape; the ONNX built here for
    # this shape is byte-identical to the one that entry was compiled from.
    digest = _sha256(reference)
    for entry in manifest.models.values():
        if entry.onnx.resolve() == reference.resolve() or (
            entry.onnx.is_file() and _sha256(entry.onnx) == digest
        ):
            return entry.onnx, entry.require_artifact(session.target), label
    raise ManifestError(
        f"{manifest.source}: no model for {label!r} ({reference}); a real board runs the "
        "compiled artifacts the manifest lists"
    )


def _manifest(session: BoardSession) -> Manifest:
    if session.manifest is None:
        raise ManifestError(
            f"{session.name}: a real board needs a compiled artifact, and the inventory names "
            "no model manifest"
        )
    return session.manifest


def _reference_model(
    session: BoardSession,
    model: str | os.PathLike[str] | onnx.ModelProto,
    given: Mapping[str, np.ndarray],
) -> tuple[Path, str]:
    """The reference ONNX on this machine (built and saved for a name) and a label for it."""
    models_dir = session.workdir / "models"
    if isinstance(model, onnx.ModelProto):
        label = _safe(model.graph.name or "model")
        return _saved(model, models_dir, label), label
    if isinstance(model, str) and model in MODELS:
        shape = next(iter(given.values())).shape
        proto = build(model, shape)
        return _saved(proto, models_dir, f"{model}-{'x'.join(map(str, shape))}"), model
    path = Path(model)
    if not path.is_file():
        raise LayoutError(
            f"run_model: {model!r} is neither a reference model ({', '.join(MODELS)}) nor an "
            "ONNX file that exists"
        )
    return path, path.stem


def _saved(proto: onnx.ModelProto, folder: Path, stem: str) -> Path:
    """The model on disk, named by its content. Written to a temporary name and renamed, so a
    process sharing the folder (an xdist worker) never reads half a file."""
    data = proto.SerializeToString()
    path = folder / f"{stem}-{hashlib.sha256(data).hexdigest()[:16]}.onnx"
    if not path.is_file():
        private_dir(folder)  # the models cache, in the board's own folder
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path


# --- inputs -------------------------------------------------------------------------------------


def _inputs(
    session: BoardSession,
    given: Mapping[str, np.ndarray],
    input_layout: str | Mapping[str, str] | None,
) -> tuple[tuple[InputSpec, ...], dict[str, np.ndarray]]:
    """The job's inputs: logical tensors where the runtime converts them, buffers packed by the
    host codec where the runtime takes only its native layout."""
    # Adapters whose runtime takes only native buffers: the host packs inputs with the codec.
    pass_through = session.adapter in pass_through_adapters()
    specs: list[InputSpec] = []
    arrays: dict[str, np.ndarray] = {}
    for name, value in given.items():
        wanted = input_layout.get(name) if isinstance(input_layout, Mapping) else input_layout
        if pass_through:
            layout_name = wanted or _default_input_layout(session.board.vendor, value.shape)
            layout = get_layout(session.target, layout_name, value.shape, value.dtype, role="input")
            arrays[name] = layout.pack(value)
        else:
            # "NCHW" asks the runtime for its default native layout.
            layout_name = wanted or "NCHW"
            arrays[name] = value
        specs.append(
            InputSpec(name, layout_name, tuple(value.shape), value.dtype.name, pass_through)
        )
    return tuple(specs), arrays


def _default_input_layout(vendor: str, shape: tuple[int, ...]) -> str:
    """The native input layout packed for a pass-through runtime when the caller names none."""
    default = unit_named(vendor).default_input_layout
    if default is None:
        raise LayoutError(f"vendor {vendor}: no default native input layout; name one")
    return default(shape)


# --- checking -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Reported:
    """A fetched tensor as :mod:`harness.sim.expect` reads it (name, shape, attributes)."""

    name: str
    shape: tuple[int, ...]
    attributes: dict[str, Any]

    @classmethod
    def of(cls, record: TensorRecord, logical: Mapping[str, tuple[int, ...]]) -> _Reported:
        shape = logical.get(record.name, tuple(record.shape))
        return cls(record.name, tuple(shape), dict(record.attributes))


def _output_shapes(reference: Path) -> dict[str, tuple[int, ...]]:
    """The static shapes the reference model declares for its outputs."""
    graph = onnx.load_model(str(reference), load_external_data=False).graph
    shapes = {}
    for value in graph.output:
        dims = value.type.tensor_type.shape.dim
        if dims and all(d.HasField("dim_value") for d in dims):
            shapes[value.name] = tuple(int(d.dim_value) for d in dims)
    return shapes


@dataclass(frozen=True)
class _Checker:
    """Diffs one device buffer against its expectation and its attributes against the codec."""

    target: str
    last_ops: Mapping[str, str]
    tolerance: float
    padding: str
    reports_dir: Path | None
    job_id: str

    def __call__(self, record: TensorRecord, expect: Expected) -> TensorRun:
        report = diff_buffers(
            expect.layout, expect.values, record.data, tolerance=self.tolerance,
            padding=self.padding,
        )  # fmt: skip
        heatmap = None
        if not report.ok and self.reports_dir is not None:
            self.reports_dir.mkdir(parents=True, exist_ok=True)
            name = _safe(f"{self.job_id}-{expect.role}-{record.name}")
            heatmap = render_heatmap(report, expect.layout, self.reports_dir / f"{name}.png")
        return TensorRun(
            name=record.name,
            role=expect.role,
            diff=report,
            attributes=tuple(self._attributes(record, expect)),
            data=record.data,
            reported=dict(record.attributes),
            layout=expect.layout,
            heatmap=heatmap,
        )

    def _attributes(self, record: TensorRecord, expect: Expected) -> list[AttributeFinding]:
        role = expect.role
        params: dict[str, str] = {}
        if role == "output" and unit_for(self.target).last_op_kind is not None:
            # The vendor's output layout depends on whether a convolution produced the output.
            params["last_op"] = self.last_ops.get(record.name, "other")
        attrs = dict(record.attributes)
        # The expectation's layout holds the logical shape (the record may hold native dims).
        shape = list(expect.layout.shape)
        predicted = predicted_layout(self.target, role, attrs, shape=shape, **params)
        return diff_attributes(predicted, attrs)


def _last_ops(reference: Path, target: str) -> dict[str, str]:
    """Per output tensor of the graph: what the target's compiler makes of the op producing it
    (``conv``, ``conv_sigmoid`` or ``other``: RKNN pads output channels by it)."""
    graph = onnx.load_model(str(reference), load_external_data=False).graph
    producers: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for node in graph.node:
        feeders = tuple(producers.get(i, "") for i in node.input if i)
        for output in node.output:
            producers[output] = node.op_type
            kinds[output] = last_op_kind(target, node.op_type, feeders)
    return kinds


def _timings(result: Result) -> dict[str, float]:
    t = result.timings
    return {"load_s": t.load_s, "run_s": t.run_s, "copy_s": t.copy_s, "total_s": t.total_s}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)[:120]
