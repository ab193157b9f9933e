"""What the host sends the board agent: a job, as one frame (the document and the input buffers).
Bounds and :class:`InputSpec` come from the board package, so an array the agent would refuse is
refused here, before anything is sent."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npu_hil.harness.board.documents import InputJson, JobJson
from npu_hil.harness.board.job import (
    DEFAULT_RUNS,
    DEFAULT_TIMEOUTS,
    DEFAULT_WARMUP,
    DTYPES,
    MAX_ELEMENTS,
    MAX_RANK,
    InputSpec,
)
from npu_hil.harness.board.wire import JOB_SCHEMA
from npu_hil.harness.errors import LayoutError

__all__ = ["JobSpec", "ModelRef", "frame_job"]


@dataclass(frozen=True)
class JobSpec:
    """One inference job: a model artifact on this machine, the adapter that runs it, the inputs."""

    job_id: str
    adapter: str
    model: str | os.PathLike[str]
    inputs: tuple[InputSpec, ...]
    outputs: tuple[str, ...] | None = None
    adapter_options: Mapping[str, Any] = field(default_factory=dict)
    load_timeout_s: float = DEFAULT_TIMEOUTS["load"]
    run_timeout_s: float = DEFAULT_TIMEOUTS["run"]
    runs: int = DEFAULT_RUNS
    warmup: int = DEFAULT_WARMUP
    pin_clocks: bool = False
    canary: bytes | None = None
    """The pattern the agent fills every output buffer the adapter owns with before each run
    (:func:`npu_hil.harness.board.job.canary_for` makes one from the job id); None: no canary."""
    runtime_log_level: int | None = None  # on the runtime's own scale; None: its default


@dataclass(frozen=True)
class ModelRef:
    """The model a job names: its path relative to the agent's cache root (``--root``), and the
    artifact's sha256."""

    path: str
    sha256: str


def _check_input(spec: InputSpec, value: Any) -> np.ndarray:
    """The bytes to send for one input; LayoutError before anything is written when the array
    does not match its spec."""
    if spec.dtype not in DTYPES:
        raise LayoutError(f"inputs[{spec.name!r}]: dtype {spec.dtype!r} is not one of {DTYPES}")
    if len(spec.shape) > MAX_RANK or math.prod(spec.shape) > MAX_ELEMENTS:
        raise LayoutError(
            f"inputs[{spec.name!r}]: shape {spec.shape} exceeds the agent's bounds "
            f"(rank <= {MAX_RANK}, <= {MAX_ELEMENTS} elements)"
        )
    array = np.asarray(value)
    if spec.pass_through:
        if array.dtype != np.uint8 or array.ndim != 1:
            raise LayoutError(
                f"inputs[{spec.name!r}]: a pass-through input is a packed device buffer "
                f"(1-D uint8), got {array.dtype} with shape {array.shape}"
            )
        return np.ascontiguousarray(array)
    if array.dtype != np.dtype(spec.dtype) or array.shape != tuple(spec.shape):
        raise LayoutError(
            f"inputs[{spec.name!r}]: expected {spec.dtype} {tuple(spec.shape)}, "
            f"got {array.dtype} {array.shape}"
        )
    return np.ascontiguousarray(array)


def _arrays_by_input(
    spec: JobSpec, input_arrays: Mapping[str, Any] | Sequence[Any]
) -> list[np.ndarray]:
    if isinstance(input_arrays, Mapping):
        unknown = sorted(set(input_arrays) - {i.name for i in spec.inputs})
        if unknown:
            raise LayoutError(f"inputs: {unknown} are not inputs of job {spec.job_id!r}")
        missing = [i.name for i in spec.inputs if i.name not in input_arrays]
        if missing:
            raise LayoutError(f"inputs: no array for {missing} (job {spec.job_id!r})")
        values = [input_arrays[i.name] for i in spec.inputs]
    else:
        values = list(input_arrays)
        if len(values) != len(spec.inputs):
            raise LayoutError(
                f"inputs: job {spec.job_id!r} has {len(spec.inputs)} inputs, "
                f"got {len(values)} arrays"
            )
    return [_check_input(i, v) for i, v in zip(spec.inputs, values, strict=True)]


def frame_job(
    spec: JobSpec, input_arrays: Mapping[str, Any] | Sequence[Any], model: ModelRef
) -> tuple[JobJson, list[memoryview]]:
    """A job as one request to the agent (the ``job`` op's inline form): the document, whose
    inputs carry their size instead of a file, and the input buffers that follow it in the same
    frame (whose trailer carries their sha256, computed as they are written). The model is one
    the board's cache already holds."""
    arrays = _arrays_by_input(spec, input_arrays)
    buffers = [a.reshape(-1).view(np.uint8).data for a in arrays]
    inputs: list[InputJson] = [
        {
            "name": ispec.name,
            "layout": ispec.layout,
            "shape": [int(d) for d in ispec.shape],
            "dtype": ispec.dtype,
            "pass_through": ispec.pass_through,
            "nbytes": b.nbytes,
        }
        for ispec, b in zip(spec.inputs, buffers, strict=True)
    ]
    document: JobJson = {
        "schema": JOB_SCHEMA,
        "job_id": spec.job_id,
        "model": {"path": model.path, "sha256": model.sha256},
        "adapter": spec.adapter,
        "adapter_options": dict(spec.adapter_options),
        "inputs": inputs,
        "outputs": None if spec.outputs is None else list(spec.outputs),
        "timeouts": {"load": float(spec.load_timeout_s), "run": float(spec.run_timeout_s)},
        "runs": int(spec.runs),
        "warmup": int(spec.warmup),
        "pin_clocks": bool(spec.pin_clocks),
    }
    if spec.canary is not None:
        document["canary"] = bytes(spec.canary).hex()
    if spec.runtime_log_level is not None:
        document["runtime_log_level"] = int(spec.runtime_log_level)
    return document, buffers
