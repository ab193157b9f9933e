"""Shared by the sim tests: inputs per target, one simulated run, and the host's expectation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from npu_hil.harness.codec import BlockedLayout
from npu_hil.harness.diff import DiffReport, diff_buffers
from npu_hil.harness.expect import Expected, expect_run
from npu_hil.harness.sim import SimInput, SimNpu, SimRun, SimTensor

INPUT_DTYPE = {"rk2118": "float16", "kl730": "int8"}
"""The integer (or float16) data each target takes natively; uint8 images elsewhere."""

FLOAT_INPUT_TARGETS = (
    "kl730",
    "rk3566",
    "rk3568",
    "rk3588",
    "rk3562",
    "rk3576",
    "rv1126b",
    "rdk-x3",
    "rdk-x5",
    "rdk-s100",
)
"""Targets that take float32 data (converted by the runtime: RKNN on the CPU, KL730 on the host,
Horizon as F32): not RV1103/RV1106/RV1103B (note 7), RV1106B (no row), RK2118 (float16 only)."""


def packed_input(name: str, layout: BlockedLayout, array: np.ndarray) -> SimInput:
    """A pass-through input: ``array`` packed by the host codec in ``layout``."""
    return SimInput(
        name, layout.pack(array), layout.name, list(layout.shape), layout.dtype.name, True
    )


def native_dtype(target: str) -> str:
    return INPUT_DTYPE.get(target, "uint8")


def random_tensor(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    kind = np.dtype(dtype)
    if kind.kind == "f":
        values: np.ndarray = (rng.standard_normal(shape) * 2).astype(kind)
        return values
    info = np.iinfo(kind)
    low, high = max(int(info.min), -128), min(int(info.max), 255)
    ints: np.ndarray = rng.integers(low, high, shape, endpoint=True).astype(kind)
    return ints


def inputs_for(model: onnx.ModelProto, dtype: str, seed: int = 0) -> dict[str, np.ndarray]:
    out = {}
    for i, value in enumerate(model.graph.input):
        shape = tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
        out[value.name] = random_tensor(shape, dtype, seed + i)
    return out


def run_sim(
    target: str,
    model: onnx.ModelProto,
    given: dict[str, np.ndarray],
    layouts: dict[str, str] | None = None,
    **options: Any,
) -> SimRun:
    npu = SimNpu(target, **options)
    loaded = npu.load(model)
    layouts = layouts or {}
    return npu.run(
        loaded, [SimInput.logical(name, v, layouts.get(name, "")) for name, v in given.items()]
    )


@dataclass
class Compared:
    expected: Expected
    device: SimTensor
    report: DiffReport


def compare(
    target: str, model: onnx.ModelProto, given: dict[str, np.ndarray], run: SimRun
) -> list[Compared]:
    """Every device buffer of the run diffed against the host's expectation."""
    inputs, outputs = expect_run(target, model, given, run.inputs, run.outputs)
    pairs = list(zip(inputs, run.inputs, strict=True)) + list(
        zip(outputs, run.outputs, strict=True)
    )
    return [
        Compared(e, device, diff_buffers(e.layout, e.values, device.data)) for e, device in pairs
    ]


def kinds(report: DiffReport) -> set[str]:
    return {finding.kind for finding in report.findings}
