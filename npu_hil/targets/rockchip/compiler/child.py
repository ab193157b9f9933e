"""The child process that runs rknn-toolkit2 on one model (``python -m
npu_hil.targets.rockchip.compiler.child JOB.json``, ``--serve`` or ``--probe``; the parent is
:mod:`.build`): docs/model-developer/models-build.md, "One process per model"."""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any, cast

from typing_extensions import NotRequired, TypedDict


class ChildJob(TypedDict):
    """The job file the parent (:mod:`.build`) writes for one model: paths are absolute."""

    onnx: str
    rknn: str
    target: str
    precision: str
    dataset: str | None
    simulate: list[list[str]]
    mean_values: NotRequired[list[list[float]]]
    std_values: NotRequired[list[list[float]]]


def read_job(path: Path) -> ChildJob:
    """The job file, written by this package's parent side: checked to be an object naming its
    model and where the compiled file goes."""
    job = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(job, dict) or not all(
        isinstance(job.get(key), str) for key in ("onnx", "rknn", "target", "precision")
    ):
        raise ValueError(f"{path}: not a compile job (onnx, rknn, target, precision)")
    return cast(ChildJob, job)


def _toolkit() -> Any:
    # The optional extra, imported only in the child (and untyped).
    module: Any = importlib.import_module("rknn.api")
    return module.RKNN


def compile_model(job: ChildJob) -> None:
    """Load ``job["onnx"]``, build for ``job["target"]`` at ``job["precision"]`` and export to
    ``job["rknn"]``; raises RuntimeError naming the step that failed."""
    rknn = _toolkit()(verbose=True)  # its log ends with the tensor tables
    try:
        steps: list[tuple[str, Any]] = [
            ("config", lambda: rknn.config(target_platform=job["target"], **_normalize(job))),
            ("load_onnx", lambda: rknn.load_onnx(model=job["onnx"])),
            (
                "build",
                lambda: rknn.build(
                    do_quantization=job["precision"] == "int8", dataset=job.get("dataset")
                ),
            ),
            ("export_rknn", lambda: rknn.export_rknn(job["rknn"])),
        ]
        if job.get("simulate"):
            steps.append(("init_runtime", lambda: rknn.init_runtime(target=None)))
        for step, call in steps:
            status = call()
            # config() returns None; the others 0 on success.
            if status not in (None, 0):
                raise RuntimeError(f"rknn-toolkit2 {step}() returned {status}")
        if job.get("simulate"):
            _simulate(rknn, job["simulate"], job["rknn"])
    finally:
        rknn.release()


def _normalize(job: ChildJob) -> dict[str, list[list[float]]]:
    """The mean and std per input the job bakes into the model, as ``config`` takes them."""
    if "mean_values" not in job or "std_values" not in job:
        return {}
    return {"mean_values": job["mean_values"], "std_values": job["std_values"]}


def _simulate(rknn: Any, samples: list[list[str]], rknn_path: str) -> None:
    """Run the toolkit's own simulator on each sample (one NCHW ``.npy`` per model input, in
    order) and keep its outputs beside the model: ``<model>.sim.npz``, ``s<k>_o<j>`` arrays."""
    import numpy as np  # the child's own import: the parent never needs the simulator

    kept: dict[str, Any] = {}
    for k, files in enumerate(samples):
        arrays = [np.load(name) for name in files]
        formats = ["nchw"] * len(arrays)  # ignored by the toolkit for inputs of rank 1 to 3
        outputs = rknn.inference(inputs=arrays, data_format=formats)
        if outputs is None:
            raise RuntimeError("rknn-toolkit2 inference() returned None")
        for j, output in enumerate(outputs):
            kept[f"s{k}_o{j}"] = np.asarray(output)
    np.savez(str(Path(rknn_path).with_suffix(".sim.npz")), **kept)


def _compile_job(spec: Path) -> int:
    try:
        compile_model(read_job(spec))
    except Exception as exc:  # the toolkit raises its own classes; the status says it failed
        print(f"E build: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def serve() -> int:
    """Import the toolkit once, then compile each job named on stdin (one JSON path a line) in
    a process forked for it, its output in the job's log (``<rknn>.log``). Answers on stdout
    ``started PID`` and then ``done STATUS`` (the exit status, or minus the signal that killed
    it), so one aborting model costs only its own process and the import is paid once."""
    _toolkit()
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    for line in sys.stdin:
        spec = Path(line.strip())
        job = read_job(spec)
        log = Path(job["rknn"]).with_suffix(".log")
        pid = os.fork()
        if pid == 0:  # the model's own process
            # The toolkit leaves debug files (check*.onnx) in the working folder: the model's.
            os.chdir(log.parent)
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            status = _compile_job(spec)
            sys.stdout.flush()
            sys.stderr.flush()
            # os._exit skips the C library's buffers, where the compiler's own log (its tensor
            # tables at the end) still sits when stdout is a file.
            ctypes.CDLL(None).fflush(None)
            os._exit(status)
        answers.write(f"started {pid}\n")
        _, raw = os.waitpid(pid, 0)
        code = -os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.WEXITSTATUS(raw)
        answers.write(f"done {code}\n")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        return serve()
    if argv[:1] == ["--probe"]:
        _toolkit()
        from importlib.metadata import version

        print(f"rknn-toolkit2 {version('rknn-toolkit2')}")
        return 0
    if len(argv) != 1:
        usage = "usage: python -m npu_hil.targets.rockchip.compiler.child JOB.json | --probe"
        print(usage, file=sys.stderr)
        return 2
    compile_model(read_job(Path(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
