"""The oracle: what a device must hold, computed on the host from the runtime's report alone:
inputs as handed over (quantized where the buffer is integer), outputs as the reference model
computes them on the held inputs, quantized and laid out as the device reported.

Fed by the vendor units' quantization models (``npu_hil/targets/<vendor>/quant.py``) and the
reference model (onnxruntime), used alike by the simulator's tests and the real-board runner:
nothing here imports the simulator (``tests/test_structure.py``). Entry point: :func:`expect_run`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import onnx

from npu_hil.harness.codec import BlockedLayout
from npu_hil.harness.codec.reported import layout_from_report
from npu_hil.harness.errors import LayoutError
from npu_hil.harness.models.numerics import numeric_model
from npu_hil.harness.models.reference import reference_outputs
from npu_hil.targets.registry import unit_for
from npu_hil.targets.unit import QuantModel

__all__ = ["Expected", "expect_run", "npu_outputs", "semantics"]


class ReportedTensor(Protocol):
    """A tensor as a run reported it (``adapters.base.TensorOut``, ``SimTensor``)."""

    @property
    def name(self) -> str: ...

    @property
    def shape(self) -> Any: ...

    @property
    def attributes(self) -> Mapping[str, object]:
        """The runtime's own record, opaque here: the vendor's report reader and quantization
        model check the fields they read."""


@dataclass(frozen=True)
class Expected:
    """One tensor's expectation: the reported layout and the logical values it must hold."""

    name: str
    role: str
    layout: BlockedLayout
    values: np.ndarray
    attributes: dict[str, Any]
    reference: np.ndarray | None = None
    """For an output: the reference model's float output the values were quantized from (the
    float reference accuracy is measured against); None for an input."""


def semantics(target: str) -> QuantModel:
    """The vendor unit's model of how the target's values relate to floats."""
    quant = unit_for(target).quant
    if quant is None:
        raise LayoutError(f"{target}: its vendor unit has no quantization model: no oracle")
    return quant


def expected_input(target: str, reported: ReportedTensor, given: np.ndarray) -> Expected:
    """What the device must hold for an input the host handed over as ``given``."""
    layout = layout_from_report(target, "input", reported.attributes, shape=list(reported.shape))
    values = np.asarray(given)
    if values.dtype != layout.dtype:
        values = semantics(target).quantizer(reported.attributes).quantize(values)
    # What the layout can hold (KL730 16-bit data loses bit 0 on the way in).
    held = layout.unpack(layout.pack(values.reshape(layout.shape)))
    return Expected(reported.name, "input", layout, held, dict(reported.attributes))


def expect_run(
    target: str,
    model: onnx.ModelProto | str | os.PathLike[str],
    given: Mapping[str, np.ndarray],
    reported_inputs: Sequence[ReportedTensor],
    reported_outputs: Sequence[ReportedTensor],
) -> tuple[list[Expected], list[Expected]]:
    """Expectations for a whole run: inputs as handed over (name → logical tensor); the
    reference outputs, computed as the target's NPU computes the graph (the vendor's numerics,
    calibrated on these inputs, as a simulated board does), then quantized and laid out as the
    device reported them. An output's ``reference`` stays the float model's output."""
    inputs = [expected_input(target, t, given[t.name]) for t in reported_inputs]
    vendor = semantics(target)
    floats, computed = npu_outputs(target, model, inputs)
    outputs = []
    for tensor in reported_outputs:
        attrs = tensor.attributes
        layout = layout_from_report(target, "output", attrs, shape=list(tensor.shape))
        values = computed[tensor.name]
        if values.dtype == np.float16:  # as float32, what the simulated board quantizes from
            values = values.astype(np.float32)
        values = vendor.output_quantizer(attrs).quantize(values)
        outputs.append(
            Expected(tensor.name, "output", layout, values, dict(attrs), floats[tensor.name])
        )
    return inputs, outputs


def npu_outputs(
    target: str, model: onnx.ModelProto | str | os.PathLike[str], inputs: Sequence[Expected]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The float model's outputs, and the outputs as the target's NPU computes them (the
    vendor's numerics through the graph, calibrated on these inputs; the float ones where the
    vendor models none). A vendor unit without ``numerics`` computes the float graph."""
    vendor = semantics(target)
    # The float tensors the model computes on, decoded from what the device holds.
    feeds = {e.name: vendor.model_input(e.attributes, e.values) for e in inputs}
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load_model(str(model))
    floats = reference_outputs(proto, feeds)
    numerics = getattr(vendor, "numerics", None)
    kind = numerics([e.attributes for e in inputs]) if numerics is not None else "float"
    if kind == "float":
        return floats, floats
    npu_model = numeric_model(proto, kind, [feeds])
    return floats, reference_outputs(npu_model, feeds, optimized=False)
