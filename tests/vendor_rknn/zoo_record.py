"""Compile the zoo (tests/zoo) with rknn-toolkit2 for every Rockchip target group and keep what
the compiler and its simulator said, as test data: ``tests/data/zoo/rknn_zoo.json.gz``.

    python tests/vendor_rknn/zoo_record.py [--out FILE] [--models a,b] [--parallel 2]

Run where the ``rknn`` extra and the toolkit are installed (the ``vendor-rknn`` tox env). Per
model, target and precision it keeps: built or refused (with the compiler's reason), the tensor
table the ``.rknn`` file stores (native shape, bytes, type) and, for a built model, the toolkit
simulator's signal-to-noise ratio against onnxruntime's float output on the same inputs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "zoo"))

from zoo_inputs import SAMPLES, TEST_SAMPLES, write_samples  # noqa: E402
from zoo_models import ZOO  # noqa: E402

from npu_hil.harness.diff.accuracy import measure  # noqa: E402
from npu_hil.harness.models.compile_set import graph_of  # noqa: E402
from npu_hil.targets.rockchip.compiler.build import (  # noqa: E402
    TOOLKIT,
    BuildFailure,
    BuildJob,
    BuildResult,
    build_all,
    precisions,
    toolkit_version,
)

TARGETS = ("rk3566", "rk3588", "rk3562", "rk3576", "rv1106", "rv1106b", "rk2118")
"""One target per platform group of the seed: rknn-toolkit2 compiles the members of a group
(RK3566/RK3568, RV1103/RV1106, RK3576/RV1126B, RV1103B/RV1106B) alike."""
OUT = HERE.parent / "data" / "zoo" / "rknn_zoo.json.gz"


def _tensor(t: Any) -> dict[str, Any]:
    return {
        "name": t.name,
        "dtype": t.dtype,
        "shape": list(t.shape),
        "native": list(t.native),
        "size": t.size,
    }


def _reference(model: onnx.ModelProto, samples: Sequence[Mapping[str, Path]]) -> list[list[Any]]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [
        session.run(None, {name: np.load(path) for name, path in sample.items()})
        for sample in samples
    ]


def _snr(job: BuildJob, reference: list[list[Any]]) -> list[float | None]:
    """Per output, the simulator's SNR over the test samples (None for integer outputs)."""
    with np.load(job.simulated) as simulated:
        figures: list[float | None] = []
        for j in range(len(reference[0])):
            want = np.concatenate([np.asarray(r[j]).ravel() for r in reference])
            if not np.issubdtype(want.dtype, np.floating):
                figures.append(None)
                continue
            got = np.concatenate(
                [simulated[f"s{k}_o{j}"].astype(np.float64).ravel() for k in range(len(reference))]
            )
            figures.append(round(measure(got, want).snr_db, 2) if got.size == want.size else None)
        return figures


def zoo_jobs(
    work: Path, builders: Mapping[str, Callable[[], onnx.ModelProto]], targets: Sequence[str]
) -> tuple[list[BuildJob], dict[str, list[list[Any]]]]:
    """One job per model, target and precision the compiler takes, each also run on the
    toolkit's simulator; and per model onnxruntime's float outputs on the same test samples."""
    jobs: list[BuildJob] = []
    references: dict[str, list[list[Any]]] = {}
    for name, build in builders.items():
        proto = build()
        onnx_path = work / "onnx" / f"{name}.onnx"
        onnx_path.parent.mkdir(parents=True, exist_ok=True)
        onnx_path.write_bytes(proto.SerializeToString())
        graph, inputs = graph_of(proto)
        shapes = {n: graph[n] for n in inputs}
        calibration = write_samples(work / "data" / name, shapes, SAMPLES, seed=1)
        tests = write_samples(work / "test" / name, shapes, TEST_SAMPLES, seed=2)
        references[name] = _reference(proto, tests)
        for target in targets:
            for precision in precisions(target):
                jobs.append(
                    BuildJob(
                        key=name,
                        onnx=onnx_path,
                        target=target,
                        precision=precision,
                        rknn=work / target / precision / f"{name}.rknn",
                        graph=graph,
                        inputs=inputs,
                        dataset=tuple(calibration) if precision == "int8" else (),
                        simulate=tuple(tests),
                    )
                )
    return jobs, references


def record_of(
    job: BuildJob, outcome: BuildResult | BuildFailure, references: Mapping[str, Any]
) -> dict[str, Any]:
    """What the data file keeps of one build."""
    entry: dict[str, Any] = {
        "model": job.key,
        "target": job.target,
        "precision": job.precision,
        "built": isinstance(outcome, BuildResult),
    }
    if isinstance(outcome, BuildResult):
        entry["inputs"] = [_tensor(t) for t in outcome.inputs]
        entry["outputs"] = [_tensor(t) for t in outcome.outputs]
        entry["simulator_snr_db"] = _snr(job, references[job.key])
    else:
        entry["reason"] = outcome.reason
        entry["log"] = list(outcome.log_tail)
    return entry


def compile_zoo(
    work: Path,
    builders: Mapping[str, Callable[[], onnx.ModelProto]],
    targets: Sequence[str] = TARGETS,
    parallel: int = 2,
) -> list[dict[str, Any]]:
    jobs, references = zoo_jobs(work, builders, targets)
    outcomes = build_all(jobs, parallel=parallel)
    return [record_of(j, o, references) for j, o in zip(jobs, outcomes, strict=True)]


def record(out: Path, names: Sequence[str], parallel: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="npu-hil-zoo-"))
    builders = {a.name: a.build for a in ZOO if not names or a.name in names}
    records = compile_zoo(work, builders, TARGETS, parallel)
    for entry in records:
        print(json.dumps({k: entry[k] for k in entry if k not in ("inputs", "log")}))
    document = {
        "provenance": {
            "compiler": f"{TOOLKIT} {toolkit_version()}",
            "made_by": "python tests/vendor_rknn/zoo_record.py",
            "models": "tests/zoo/architectures.py (onnx.helper, fixed seeds)",
            "calibration": f"{SAMPLES} samples per model (tests/zoo/zoo_inputs.py, seed 1)",
            "simulator": f"init_runtime(target=None) on {TEST_SAMPLES} samples (seed 2); SNR "
            "against onnxruntime's float output on the same samples",
            "targets": list(TARGETS),
        },
        "records": records,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as stream:
        json.dump(document, stream, indent=1)
    return document


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--models", default="", help="comma-separated zoo names (default: all)")
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    record(args.out, names, args.parallel)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
