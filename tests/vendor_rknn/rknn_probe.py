"""One-model probes of rknn-toolkit2, shared by the recorders (widths_record.py, ops_record.py):
a model and one calibration sample written to a scratch folder, built for a target at its
default precision, and each outcome as built or refused with the compiler's reason."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx

from npu_hil.harness.models.compile_set import graph_of
from npu_hil.targets.rockchip.compiler.build import BuildFailure, BuildJob, build_all, precisions


def probe_job(
    folder: Path, key: str, model: onnx.ModelProto, target: str, sample: np.ndarray
) -> BuildJob:
    """``model`` for ``target`` with ``sample`` as its one calibration sample (an int8 build
    needs one); the files are written once per key."""
    source = folder / f"{key}.onnx"
    if not source.is_file():
        onnx.save(model, str(source))
    calibration = folder / f"{key}.npy"
    if not calibration.is_file():
        np.save(calibration, sample)
    graph, inputs = graph_of(model)
    return BuildJob(
        key,
        source,
        target,
        precisions(target)[0],
        folder / target / f"{key}.rknn",
        graph,
        inputs,
        dataset=({inputs[0]: calibration},),
    )


def probe(jobs: Sequence[BuildJob], parallel: int) -> list[str | None]:
    """Per job, None when it built, else the refusal: the reason and the build log's last lines."""
    return [
        " / ".join([outcome.reason, *outcome.log_tail[-3:]])[:300]
        if isinstance(outcome, BuildFailure)
        else None
        for outcome in build_all(jobs, parallel=parallel)
    ]
