"""Rockchip's own simulator as a reference: the model compiled by rknn-toolkit2 for the target
and run on the toolkit's simulator (``init_runtime(target=None)``), in a child process, on the
given samples. What a simulated board with ``numerics: vendor`` computes, when the toolkit is
installed (the ``rknn`` extra)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx

from npu_hil.targets.compiler import CompilerError
from npu_hil.targets.rockchip.compiler.build import BuildFailure, BuildJob, build_one, probe

__all__ = ["simulate"]


def _graph(proto: onnx.ModelProto) -> tuple[dict[str, tuple[int, ...]], tuple[str, ...]]:
    constants = {init.name for init in proto.graph.initializer}
    inputs = [v for v in proto.graph.input if v.name not in constants]

    def shape(value: onnx.ValueInfoProto) -> tuple[int, ...]:
        return tuple(int(d.dim_value) for d in value.type.tensor_type.shape.dim)

    graph = {v.name: shape(v) for v in (*inputs, *proto.graph.output)}
    return graph, tuple(v.name for v in inputs)


def _write(folder: Path, samples: Sequence[Mapping[str, np.ndarray]]) -> list[dict[str, Path]]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for k, sample in enumerate(samples):
        paths = {}
        for name, array in sample.items():
            paths[name] = folder / f"{k:03d}.{name}.npy"
            np.save(paths[name], np.ascontiguousarray(array, dtype=np.float32))
        written.append(paths)
    return written


def simulate(
    proto: onnx.ModelProto,
    target: str,
    precision: str,
    calibration: Sequence[Mapping[str, np.ndarray]],
    samples: Sequence[Mapping[str, np.ndarray]],
) -> list[dict[str, np.ndarray]]:
    """Per sample, the model's outputs (name → float32 array) as rknn-toolkit2's simulator gives
    them for ``target`` at ``precision``, calibrated on ``calibration`` (int8). CompilerError
    when the toolkit is not installed or refuses the model."""
    reason = probe()
    if reason is not None:
        raise CompilerError(f"the vendor's simulator cannot run here: {reason}")
    graph, inputs = _graph(proto)
    outputs = [name for name in graph if name not in inputs]
    with tempfile.TemporaryDirectory(prefix="npu-hil-rknn-sim-") as folder:
        work = Path(folder)
        onnx_path = work / "model.onnx"
        onnx.save_model(proto, str(onnx_path))
        job = BuildJob(
            key="model",
            onnx=onnx_path,
            target=target,
            precision=precision,
            rknn=work / "model.rknn",
            graph=graph,
            inputs=inputs,
            dataset=tuple(_write(work / "calibration", calibration)) if precision == "int8" else (),
            simulate=tuple(_write(work / "samples", samples)),
        )
        outcome = build_one(job)
        if isinstance(outcome, BuildFailure):
            raise CompilerError(outcome.message)
        with np.load(job.simulated) as kept:
            return [
                {name: np.asarray(kept[f"s{k}_o{j}"]) for j, name in enumerate(outputs)}
                for k in range(len(samples))
            ]
