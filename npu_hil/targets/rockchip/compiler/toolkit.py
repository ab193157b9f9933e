"""Rockchip's compiler as the vendor unit's compiler hook
(:class:`~npu_hil.targets.compiler.ModelCompiler`): what ``npu-hil models build`` and
``models install-compiler`` ask of rknn-toolkit2, answered by :mod:`.build`, and the toolkit's own
simulator as a reference (``numerics: vendor``)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx

from npu_hil.targets.compiler import (
    CompileFailure,
    CompileJob,
    CompilerError,
    CompileResult,
    Normalize,
)
from npu_hil.targets.rockchip.compiler import build as driver

__all__ = ["COMPILER", "RknnCompiler"]


def _graph(proto: onnx.ModelProto) -> tuple[dict[str, tuple[int, ...]], tuple[str, ...]]:
    constants = {init.name for init in proto.graph.initializer}
    inputs = [v for v in proto.graph.input if v.name not in constants]

    def shape(value: onnx.ValueInfoProto) -> tuple[int, ...]:
        return tuple(int(d.dim_value) for d in value.type.tensor_type.shape.dim)

    graph = {v.name: shape(v) for v in (*inputs, *proto.graph.output)}
    return graph, tuple(v.name for v in inputs)


class RknnCompiler:
    toolkit = driver.TOOLKIT
    version = driver.TOOLKIT_VERSION
    described = f"Rockchip's compiler ({driver.TOOLKIT}, the `rknn` extra)"
    install_described = (
        f"pip install --no-deps {driver.TOOLKIT}=={driver.TOOLKIT_VERSION}: the `rknn` extra "
        "brings the dependencies its ONNX path imports (a CPU torch instead of its torch<=2.4.0 "
        "pin), which pip extras cannot say. Then checks that it imports."
    )
    install_hint = "(install the `rknn` extra: pip install 'npu-hil[rknn]')"
    suffix = ".rknn"
    artifact_key = "rknn"
    precisions: tuple[str, ...] = driver.PRECISIONS
    precision_help = "default: int8, or float16 on RK2118 (which builds nothing else)"

    # What the compiler hook asks that the driver answers as it is.
    default_precision = staticmethod(driver.default_precision)
    check_precision = staticmethod(driver.check_precision)
    check_dataset = staticmethod(driver.check_dataset)
    probe = staticmethod(driver.probe)
    write_calibration = staticmethod(driver.write_calibration)
    read_dataset = staticmethod(driver.read_dataset)

    def job(
        self,
        key: str,
        onnx: Path,
        target: str,
        precision: str,
        out: Path,
        graph: Mapping[str, tuple[int, ...]],
        inputs: tuple[str, ...],
        dataset: Sequence[Mapping[str, Path]],
        normalize: Normalize | None = None,
    ) -> driver.BuildJob:
        return driver.BuildJob(
            key=key,
            onnx=onnx,
            target=target,
            precision=precision,
            rknn=out / target / f"{key}{self.suffix}",
            graph=graph,
            inputs=inputs,
            dataset=tuple(dataset),
            normalize=normalize,
        )

    def simulate(
        self,
        proto: onnx.ModelProto,
        target: str,
        precision: str,
        calibration: Sequence[Mapping[str, np.ndarray]],
        samples: Sequence[Mapping[str, np.ndarray]],
    ) -> list[dict[str, np.ndarray]]:
        """Per sample, the model's outputs (name → float32 array) as rknn-toolkit2's own simulator
        (``init_runtime(target=None)``, in a child process) gives them for ``target`` at
        ``precision``, calibrated on ``calibration`` (int8): what a simulated board with
        ``numerics: vendor`` computes. CompilerError when the toolkit is not installed or refuses
        the model."""
        reason = driver.probe()
        if reason is not None:
            raise CompilerError(f"the vendor's simulator cannot run here: {reason}")
        graph, inputs = _graph(proto)
        outputs = [name for name in graph if name not in inputs]
        with tempfile.TemporaryDirectory(prefix="npu-hil-rknn-sim-") as folder:
            work = Path(folder)
            onnx_path = work / "model.onnx"
            onnx.save_model(proto, str(onnx_path))
            job = driver.BuildJob(
                key="model",
                onnx=onnx_path,
                target=target,
                precision=precision,
                rknn=work / "model.rknn",
                graph=graph,
                inputs=inputs,
                dataset=tuple(driver.write_samples(work / "calibration", calibration))
                if precision == "int8"
                else (),
                simulate=tuple(driver.write_samples(work / "samples", samples)),
            )
            outcome = driver.build_one(job)
            if isinstance(outcome, driver.BuildFailure):
                raise CompilerError(outcome.message)
            with np.load(job.simulated) as kept:
                return [
                    {name: np.asarray(kept[f"s{k}_o{j}"]) for j, name in enumerate(outputs)}
                    for k in range(len(samples))
                ]

    def build(
        self, jobs: Sequence[CompileJob], parallel: int
    ) -> tuple[list[CompileResult], list[CompileFailure]]:
        mine = [job for job in jobs if isinstance(job, driver.BuildJob)]
        if len(mine) != len(jobs):
            raise TypeError("RknnCompiler.build takes the jobs RknnCompiler.job made")
        outcomes = driver.build_all(mine, parallel=parallel)
        results: list[CompileResult] = [o for o in outcomes if isinstance(o, driver.BuildResult)]
        failures: list[CompileFailure] = [o for o in outcomes if isinstance(o, driver.BuildFailure)]
        return results, failures


COMPILER = RknnCompiler()
