"""The pipeline's expect and diff steps: what each buffer must hold, computed from what the device
*reported*, then every buffer diffed byte for byte and every attribute compared with the codec's
prediction (a disagreement is a finding, not a failure: the bytes decide)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from npu_hil.harness.agent.protocol import Result, TensorRecord
from npu_hil.harness.codec.reported import predicted_layout
from npu_hil.harness.diff import diff_buffers
from npu_hil.harness.diff.accuracy import Accuracy, Thresholds, measure
from npu_hil.harness.diff.attributes import AttributeFinding, diff_attributes
from npu_hil.harness.diff.heatmap import render_heatmap
from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.expect import Expected, expect_run, semantics
from npu_hil.harness.models.reference import ModelInputError, reference_outputs
from npu_hil.harness.pipeline.model import safe_name
from npu_hil.harness.pipeline.result import TensorRun
from npu_hil.targets import last_op_kind
from npu_hil.targets.registry import unit_for

__all__ = ["check_result"]


def check_result(
    target: str,
    reference: Path,
    given: Mapping[str, np.ndarray],
    result: Result,
    *,
    tolerance: float,
    padding: str,
    reports_dir: Path | None,
    job_id: str,
    accuracy: Thresholds | None = None,
) -> tuple[list[TensorRun], list[TensorRun]]:
    """The run's input and output buffers, each against its expectation (a heatmap per failing
    one in ``reports_dir``); every output also measured against the float reference, and held
    to ``accuracy`` when given."""
    # The logical shapes are the model's: a runtime may give its tensors' native dims instead
    # (rknn_native: NC1HWC2 [N, C1, H, W, C2]), which the attributes carry anyway.
    graph = onnx.load_model(str(reference), load_external_data=False).graph
    logical = {**_output_shapes(graph), **{k: v.shape for k, v in given.items()}}
    expected_in, expected_out = expect_run(
        target,
        reference,
        given,
        [_Reported.of(t, logical) for t in result.inputs],
        [_Reported.of(t, logical) for t in result.outputs],
    )
    check = _Checker(
        target=target,
        last_ops=_last_ops(graph, target),
        tolerance=tolerance,
        padding=padding,
        reports_dir=reports_dir,
        job_id=job_id,
        thresholds=accuracy,
        floats=_float_reference(reference, given),
        canary_note=_canary_note(result),
    )
    checked_in = [check(record, e) for record, e in zip(result.inputs, expected_in, strict=True)]
    checked_out = [check(record, e) for record, e in zip(result.outputs, expected_out, strict=True)]
    return checked_in, checked_out


def _canary_note(result: Result) -> str:
    """Why the buffers not filled with the canary were not checked for unwritten bytes: never a
    silent "clean" (an agent without canaries says nothing of them at all)."""
    canary = result.canary
    if canary is None:
        return "not applicable: the agent did not fill buffers with a canary"
    return f"not applicable: {canary.reason or 'the adapter did not fill this buffer'}"


@dataclass(frozen=True)
class _Reported:
    """A fetched tensor as :mod:`npu_hil.harness.expect` reads it (name, shape, attributes)."""

    name: str
    shape: tuple[int, ...]
    attributes: dict[str, Any]

    @classmethod
    def of(cls, record: TensorRecord, logical: Mapping[str, tuple[int, ...]]) -> _Reported:
        shape = logical.get(record.name, tuple(record.shape))
        return cls(record.name, tuple(shape), dict(record.attributes))


def _float_reference(reference: Path, given: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The float model on the caller's own inputs, when they are the model's inputs (same names
    and shapes): what the device's output is measured against, input quantization included.
    Inputs in another form (an NV12 frame for an image model) are not the model's: then the
    oracle's output on what the device held stands in (:attr:`Expected.reference`)."""
    graph = onnx.load_model(str(reference), load_external_data=False).graph
    constants = {init.name for init in graph.initializer}
    declared = {value.name: _dims(value) for value in graph.input if value.name not in constants}
    if set(declared) != set(given) or any(
        len(shape) != np.ndim(given[name])
        or any(d not in (-1, g) for d, g in zip(shape, np.shape(given[name]), strict=True))
        for name, shape in declared.items()
    ):
        return {}
    try:
        return reference_outputs(reference, given)
    except ModelInputError:  # the oracle ran on what the device held; its output stands in
        return {}


def _output_shapes(graph: onnx.GraphProto) -> dict[str, tuple[int, ...]]:
    """The static shapes the reference model declares for its outputs."""
    shapes = {value.name: _dims(value) for value in graph.output}
    return {name: dims for name, dims in shapes.items() if dims and -1 not in dims}


def _dims(value: onnx.ValueInfoProto) -> tuple[int, ...]:
    """A graph input's or output's declared dims (-1: not fixed)."""
    dims = value.type.tensor_type.shape.dim
    return tuple(int(d.dim_value) if d.HasField("dim_value") else -1 for d in dims)


@dataclass(frozen=True)
class _Checker:
    """Diffs one device buffer against its expectation and its attributes against the codec."""

    target: str
    last_ops: Mapping[str, str]
    tolerance: float
    padding: str
    reports_dir: Path | None
    job_id: str
    thresholds: Thresholds | None = None
    floats: Mapping[str, np.ndarray] = field(default_factory=dict)
    """The float model's outputs on the caller's inputs (empty: on what the device held)."""
    canary_note: str = ""
    """Said of every buffer the agent did not fill with the job's canary (why not)."""

    def __call__(self, record: TensorRecord, expect: Expected) -> TensorRun:
        report = diff_buffers(
            expect.layout,
            expect.values,
            record.data,
            tolerance=self.tolerance,
            padding=self.padding,
            canary=record.canary,
        )
        if record.canary is None and self.canary_note:
            report.canary_note = self.canary_note
        heatmap = None
        if not report.ok and self.reports_dir is not None:
            self.reports_dir.mkdir(parents=True, exist_ok=True)
            name = safe_name(f"{self.job_id}-{expect.role}-{record.name}")
            heatmap = render_heatmap(report, expect.layout, self.reports_dir / f"{name}.png")
        figures, note = self._accuracy(record, expect)
        return TensorRun(
            name=record.name,
            role=expect.role,
            diff=report,
            attributes=tuple(self._attributes(record, expect)),
            data=record.data,
            reported=dict(record.attributes),
            layout=expect.layout,
            heatmap=heatmap,
            accuracy=figures,
            accuracy_note=note,
            accuracy_breaches=tuple(self._breaches(figures, note, expect)),
        )

    def _accuracy(self, record: TensorRecord, expect: Expected) -> tuple[Accuracy | None, str]:
        """An output's figures against the float reference, the device's buffer dequantized by
        the quantization it reported (the vendor unit's model, as the oracle quantizes); when
        the buffer cannot be read that way, None and why (the byte diff says what is wrong)."""
        if expect.reference is None:
            return None, ""
        what = f"{expect.role} {record.name!r}"
        given = self.floats.get(record.name)
        reference, basis = (expect.reference, "held") if given is None else (given, "given")
        try:
            stored = np.asarray(expect.layout.unpack(record.data))
            quantizer = semantics(self.target).output_quantizer(dict(record.attributes))
            figures = measure(quantizer.dequantize(stored), reference, what)
            return dataclasses.replace(figures, inputs=basis), ""
        except (NpuHilError, ValueError) as exc:
            return None, f"no accuracy figures: {exc}"

    def _breaches(self, figures: Accuracy | None, note: str, expect: Expected) -> list[str]:
        if self.thresholds is None or not self.thresholds.active or expect.reference is None:
            return []
        if figures is None:
            return [note]
        return self.thresholds.breaches(figures)

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


def _last_ops(graph: onnx.GraphProto, target: str) -> dict[str, str]:
    """Per output tensor of the graph: what the target's compiler makes of the op producing it
    (``conv``, ``conv_sigmoid`` or ``other``: RKNN pads output channels by it)."""
    producers: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for node in graph.node:
        feeders = tuple(producers.get(i, "") for i in node.input if i)
        for output in node.output:
            producers[output] = node.op_type
            kinds[output] = last_op_kind(target, node.op_type, feeders)
    return kinds
