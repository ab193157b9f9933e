"""The simulated board's device time: a small cost model of the target's NPU.

Modeled, not measured (onnxruntime's wall time on a shared CI runner says how loaded it is, not
how fast the target is): ``(overhead + ops / (tops · utilisation)) · spread``, each term in
docs/model-developer/figures.md, "Simulated timing". No prediction of a real board's speed.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from npu_hil.harness.sim.options import unit_of
from npu_hil.harness.simkit.graph import inferred_shapes
from npu_hil.targets.unit import NpuThroughput

OVERHEAD_S = 100e-6
"""Per call: submitting the job to the NPU and taking its completion interrupt (the order of
the vendors' smallest reported run times for a tiny model)."""

UTILISATION = 0.3
"""The share of the peak a small model keeps the MAC array busy (a modest, round figure)."""

ELEMENT_OPS = 8.0
"""Ops charged per element produced by a node that is not a MAC op: such nodes run on the NPU's
far narrower vector / elementwise unit (or move data), not on the MAC array."""

SPREAD = 0.02
"""The largest run-to-run spread, as a fraction of the modeled time (±2 %)."""


UNRATED = NpuThroughput(0.1, 1, "no published figure: as slow as the slowest rated target")

MAC_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm")


@dataclass(frozen=True)
class Work:
    """What one run of a graph costs: its multiply-accumulates and the elements produced by
    every other node."""

    macs: int = 0
    elements: int = 0

    @property
    def ops(self) -> float:
        return 2.0 * self.macs + ELEMENT_OPS * self.elements


def _count(shape: tuple[int | None, ...] | None) -> int | None:
    if shape is None:
        return None
    dims = [d for d in shape if d is not None and d >= 0]
    if len(dims) != len(shape):
        return None
    return int(np.prod(dims, dtype=np.int64)) if dims else 1


def count_work(model: onnx.ModelProto) -> Work:
    """The MACs and element count of ``model`` (shapes by ONNX shape inference; a node whose
    shapes are not static counts its output elements only, or nothing)."""
    graph, shapes = inferred_shapes(model)
    shapes.update({init.name: tuple(int(d) for d in init.dims) for init in graph.initializer})
    macs = elements = 0
    for node in model.graph.node:
        out = _count(shapes.get(node.output[0])) if node.output else None
        if node.op_type not in MAC_OPS:
            elements += out or 0
            continue
        weight_shape = shapes.get(node.input[1]) if len(node.input) > 1 else None
        if out is None or not weight_shape or any(d is None for d in weight_shape):
            elements += out or 0
            continue
        dims = [int(d) for d in weight_shape if d is not None]
        if node.op_type == "Conv":
            # each output element: (C_in / group) · kH · kW products, the weight's [1:]
            macs += out * int(np.prod(dims[1:], dtype=np.int64))
        elif node.op_type == "ConvTranspose":
            # each input element is spread over (C_out / group) · kH · kW outputs
            source = _count(shapes.get(node.input[0])) or 0
            macs += source * int(np.prod(dims[1:], dtype=np.int64))
        else:  # MatMul / Gemm: K products per output element
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            k_axis = 1 if node.op_type == "Gemm" and attrs.get("transB", 0) else 0
            k = dims[-2 + k_axis] if len(dims) >= 2 else dims[0]
            macs += out * k
    return Work(macs=macs, elements=elements)


def throughput(target: str) -> NpuThroughput:
    """The target's NPU figure; a target whose unit rates none gets :data:`UNRATED`."""
    return unit_of(target).npu_throughput.get(target, UNRATED)


def nominal_s(work: Work, target: str) -> float:
    """The modeled time of one call without the spread."""
    rate = throughput(target).per_model_tops * 1e12 * UTILISATION
    return OVERHEAD_S + work.ops / rate


def spread(seed: int, index: int) -> float:
    """The factor of call ``index``: within 1 ± :data:`SPREAD`, the same for the same seed and
    index."""
    rng = np.random.default_rng([seed & 0xFFFFFFFF, index])
    return 1.0 + SPREAD * float(rng.uniform(-1.0, 1.0))


def modeled_s(work: Work, target: str, index: int, seed: int | None = None) -> float:
    """The device time of call ``index`` of a model of ``work`` on ``target``."""
    # A stable seed per target (Python's ``hash`` of a string changes per process).
    base = zlib.crc32(target.encode("utf-8")) if seed is None else seed
    return nominal_s(work, target) * spread(base, index)
