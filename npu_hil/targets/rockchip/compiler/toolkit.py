"""Rockchip's compiler as the vendor unit's compiler hook
(:class:`~npu_hil.targets.compiler.ModelCompiler`): what ``npu-hil models build`` and
``models install-compiler`` ask of rknn-toolkit2, answered by :mod:`.build`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx

from npu_hil.targets.compiler import CompileFailure, CompileJob, CompileResult, Normalize
from npu_hil.targets.rockchip.compiler import build as driver

__all__ = ["COMPILER", "RknnCompiler"]


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
        """The toolkit's own simulator on ``samples`` (:mod:`.simulate`)."""
        from npu_hil.targets.rockchip.compiler.simulate import simulate

        return simulate(proto, target, precision, calibration, samples)

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
