"""Compile ONNX models to ``.rknn`` with Rockchip's compiler (:mod:`.child`), one child process per
model: the calibration set, the build log, the compiled file's tensor table, and a failure that is
its model's own (docs/model-developer/models-build.md, "One process per model"); and the vendor
unit's compiler hook (:data:`COMPILER`, a :class:`~npu_hil.targets.compiler.ModelCompiler`) on
it, with the toolkit's own simulator as a reference (``numerics: vendor``)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import onnx

from npu_hil.harness.errors import ArtifactError
from npu_hil.harness.files import load_npy
from npu_hil.targets.compiler import (
    CompileFailure,
    CompileJob,
    CompilerError,
    CompileResult,
    Normalize,
)
from npu_hil.targets.rockchip.artifact import NativeTensor, read_tensor_table

if TYPE_CHECKING:
    from npu_hil.targets.rockchip.compiler.child import ChildJob

TOOLKIT = "rknn-toolkit2"
TOOLKIT_VERSION = "2.5.0"
"""The compiler version this project is checked against (tests/vendor_rknn)."""

PRECISIONS = ("int8", "float16")
_ONLY: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("rv1103", "rv1106", "rv1103b", "rv1106b"), ("int8",)),
    "rk2118": ("float16",),
}
CALIBRATION_SAMPLES = 4
BUILD_TIMEOUT_S = 600.0
_LOG_TAIL = 12


def precisions(target: str) -> tuple[str, ...]:
    """What rknn-toolkit2 2.5.0 builds for ``target``: int8 only on RV1103/06 and RV1103B/06B
    ("mini" model files), float16 only on RK2118 (an int8 conv aborts the compiler), both
    elsewhere."""
    return _ONLY.get(target, PRECISIONS)


def default_precision(target: str) -> str:
    return precisions(target)[0]


def check_precision(target: str, precision: str) -> None:
    allowed = precisions(target)
    if precision not in allowed:
        raise CompilerError(
            f"{target}: rknn-toolkit2 {TOOLKIT_VERSION} builds {' and '.join(allowed)} only, "
            f"not {precision}"
        )


def toolkit_version() -> str | None:
    """The installed rknn-toolkit2's version, or None when it is not installed."""
    try:
        return metadata.version(TOOLKIT)
    except metadata.PackageNotFoundError:
        return None


def probe(timeout_s: float = 120.0) -> str | None:
    """None when the compiler imports in a child process, else why not (one line)."""
    if toolkit_version() is None:
        return (
            f"{TOOLKIT} is not installed (pip install 'npu-hil[rknn]' and then "
            "`npu-hil models install-compiler`)"
        )
    try:
        done = subprocess.run(
            [sys.executable, "-m", "npu_hil.targets.rockchip.compiler.child", "--probe"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"importing {TOOLKIT} took more than {timeout_s:.0f} s"
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return f"{TOOLKIT} does not import: {lines[-1] if lines else f'exit {done.returncode}'}"
    return None


@dataclass(frozen=True)
class BuildJob:
    """One model for one target."""

    key: str
    onnx: Path
    target: str
    precision: str
    rknn: Path
    graph: Mapping[str, tuple[int, ...]]
    """Graph input and output names and shapes (inputs first, in order)."""
    inputs: tuple[str, ...]
    dataset: Sequence[Mapping[str, Path]] = ()
    """Calibration samples (int8): per sample, one NCHW ``.npy`` per input."""
    normalize: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    """Mean and std per channel baked into the model (``rknn.config(mean_values,
    std_values)``): its inputs then take raw pixels, and so does the calibration set."""
    simulate: Sequence[Mapping[str, Path]] = ()
    """Samples to run through the toolkit's own simulator after the build (the outputs land in
    :attr:`simulated`); none by default."""

    @property
    def simulated(self) -> Path:
        """The simulator's outputs: ``s<sample>_o<output>`` arrays, float32 as it returns them."""
        return self.rknn.with_suffix(".sim.npz")

    @property
    def artifact(self) -> Path:
        return self.rknn

    @property
    def log(self) -> Path:
        return self.rknn.with_suffix(".log")


@dataclass(frozen=True)
class BuildResult:
    job: BuildJob
    inputs: tuple[NativeTensor, ...]
    outputs: tuple[NativeTensor, ...]
    variant: str
    compiler: str


@dataclass(frozen=True)
class BuildFailure:
    job: BuildJob
    reason: str
    log_tail: tuple[str, ...] = field(default=())

    @property
    def message(self) -> str:
        tail = "".join(f"\n    {line}" for line in self.log_tail)
        return (
            f"{self.job.key} for {self.job.target} ({self.job.precision}): {self.reason} "
            f"(build log: {self.job.log}){tail}"
        )


def write_calibration(
    folder: Path, inputs: Mapping[str, tuple[int, ...]], samples: int = CALIBRATION_SAMPLES
) -> list[dict[str, Path]]:
    """A small deterministic calibration set: float32 NCHW samples spread over 0..255, the range
    of the uint8 images the regression suite feeds int8 targets."""
    rng = np.random.default_rng(20250)
    drawn = [
        {name: rng.uniform(0.0, 255.0, size=shape) for name, shape in inputs.items()}
        for _ in range(samples)
    ]
    return write_samples(folder, drawn)


def write_samples(
    folder: Path, samples: Sequence[Mapping[str, np.ndarray]]
) -> list[dict[str, Path]]:
    """Each sample's arrays as float32 ``NNN.<input>.npy`` files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for k, sample in enumerate(samples):
        paths = {}
        for name, array in sample.items():
            paths[name] = folder / f"{k:03d}.{name}.npy"
            np.save(paths[name], np.ascontiguousarray(array, dtype=np.float32))
        written.append(paths)
    return written


def check_dataset(folder: Path) -> None:
    """``--dataset``: a folder (not a FIFO, a device or a link loop), checked before the compiler
    is looked for, so a typo is the one-line error whether or not the toolkit is installed."""
    try:
        info = os.stat(folder)
    except FileNotFoundError:
        raise CompilerError(f"--dataset {folder}: no such folder") from None
    except (OSError, ValueError) as exc:
        raise CompilerError(f"--dataset {folder}: expected a folder of .npy files: {exc}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise CompilerError(f"--dataset {folder}: expected a folder of .npy files, got a file")


def read_dataset(folder: Path, inputs: Mapping[str, tuple[int, ...]]) -> list[dict[str, Path]]:
    """Calibration samples given by the user: ``NNN.npy`` files for a one-input model, or
    ``NNN.<input>.npy`` per input; each an NCHW array of the input's shape."""
    check_dataset(folder)
    names = list(inputs)
    samples: dict[str, dict[str, Path]] = {}
    for path in sorted(folder.glob("*.npy")):
        stem = path.name[: -len(".npy")]
        sample, _, name = stem.partition(".")
        if not name:
            if len(names) != 1:
                raise CompilerError(
                    f"{path}: a model with inputs {', '.join(names)} needs one file per input "
                    "(NNN.<input>.npy)"
                )
            name = names[0]
        if name not in inputs:
            raise CompilerError(f"{path}: the model has no input {name!r} ({', '.join(names)})")
        array = load_npy(path)
        if tuple(array.shape) != tuple(inputs[name]):
            raise CompilerError(
                f"{path}: expected an NCHW array of shape {list(inputs[name])} for input "
                f"{name!r}, got {list(array.shape)}"
            )
        samples.setdefault(sample, {})[name] = path
    complete = [s for _, s in sorted(samples.items()) if set(s) == set(names)]
    if not complete:
        raise CompilerError(
            f"{folder}: no complete calibration sample for inputs {', '.join(names)} "
            "(NNN.npy or NNN.<input>.npy files)"
        )
    return complete


def _dataset_file(job: BuildJob) -> Path | None:
    """The toolkit's dataset list: one line per sample, the inputs' files space-separated."""
    if job.precision != "int8":
        return None
    listing = job.rknn.with_suffix(".dataset.txt")
    lines = [" ".join(str(sample[name].resolve()) for name in job.inputs) for sample in job.dataset]
    listing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return listing


def _tail(log: Path) -> tuple[str, ...]:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ()
    kept = [line.rstrip() for line in lines if line.strip() and "it/s]" not in line]
    # The compiler's error lines ("E RKNN: ...", "E build: ...") say why; then the last lines.
    errors = [line for line in kept if line.lstrip("\x1b[0123456789;m").startswith("E ")]
    last = [line for line in kept[-3:] if line not in errors]
    return tuple((errors + last)[-_LOG_TAIL:])


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"the compiler's process was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"the compiler's process was killed by signal {-code}"
    return f"the compiler's process exited with status {code}"


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # One thread per child, since models are built side by side.
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _prepare(job: BuildJob) -> Path | BuildFailure:
    """The child's job file, or why the job cannot start."""
    if job.precision == "int8" and not job.dataset:
        return BuildFailure(job, "an int8 build needs calibration samples")
    job.rknn.parent.mkdir(parents=True, exist_ok=True)
    job.rknn.unlink(missing_ok=True)
    dataset = _dataset_file(job)
    spec: ChildJob = {
        "onnx": str(job.onnx.resolve()),
        "rknn": str(job.rknn.resolve()),
        "target": job.target,
        "precision": job.precision,
        "dataset": None if dataset is None else str(dataset.resolve()),
        "simulate": [
            [str(sample[name].resolve()) for name in job.inputs] for sample in job.simulate
        ],
    }
    if job.normalize is not None:
        spec["mean_values"] = [list(job.normalize[0])] * len(job.inputs)
        spec["std_values"] = [list(job.normalize[1])] * len(job.inputs)
    spec_file = job.rknn.with_suffix(".job.json")
    spec_file.write_text(json.dumps(spec, indent=1), encoding="utf-8")
    return spec_file


def _finish(job: BuildJob, code: int) -> BuildResult | BuildFailure:
    """What the child left: its exit status, the compiled file's tensor table."""
    if code != 0:
        return BuildFailure(job, _exit_text(code), _tail(job.log))
    if not job.rknn.is_file():
        return BuildFailure(job, f"the compiler wrote no {job.rknn.name}", _tail(job.log))
    try:
        table = read_tensor_table(job.rknn, job.graph)
    except ArtifactError as exc:
        return BuildFailure(job, exc.message)
    order = {name: k for k, name in enumerate(job.graph)}
    return BuildResult(
        job,
        tuple(sorted(table.inputs, key=lambda t: order[t.name])),
        tuple(sorted(table.outputs, key=lambda t: order[t.name])),
        table.variant,
        f"{TOOLKIT} {toolkit_version() or '?'}",
    )


def build_one(job: BuildJob, *, timeout_s: float = BUILD_TIMEOUT_S) -> BuildResult | BuildFailure:
    """Compile ``job`` in a child process of its own and read what the compiler stored. The
    precision is not checked here (:func:`check_precision` is the caller's), so a build the
    compiler cannot do fails as the compiler fails it."""
    spec_file = _prepare(job)
    if isinstance(spec_file, BuildFailure):
        return spec_file
    try:
        with job.log.open("wb") as log:
            done = subprocess.run(
                [sys.executable, "-m", "npu_hil.targets.rockchip.compiler.child", str(spec_file)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=job.rknn.parent,
                env=_child_env(),
                timeout=timeout_s,
                check=False,
            )
    except subprocess.TimeoutExpired:
        return BuildFailure(job, f"the compiler took more than {timeout_s:.0f} s", _tail(job.log))
    return _finish(job, done.returncode)


class _Server:
    """A ``rknn_child --serve`` process: the toolkit imported once, a process forked per model."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "npu_hil.targets.rockchip.compiler.child", "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
            env=_child_env(),
        )

    def build(self, job: BuildJob, timeout_s: float) -> BuildResult | BuildFailure:
        spec_file = _prepare(job)
        if isinstance(spec_file, BuildFailure):
            return spec_file
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(f"{spec_file.resolve()}\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            return BuildFailure(job, "the compiler's server process has ended", _tail(job.log))
        started = self.process.stdout.readline().split()
        if len(started) != 2 or started[0] != "started":
            return BuildFailure(job, "the compiler's server process has ended", _tail(job.log))
        pid = int(started[1])
        timer = threading.Timer(timeout_s, _kill, (pid,))
        timer.start()
        try:
            done = self.process.stdout.readline().split()
        finally:
            timer.cancel()
        if len(done) != 2 or done[0] != "done":
            return BuildFailure(job, "the compiler's server process has ended", _tail(job.log))
        return _finish(job, int(done[1]))

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def build_all(
    jobs: Sequence[BuildJob], *, parallel: int = 1, timeout_s: float = BUILD_TIMEOUT_S
) -> list[BuildResult | BuildFailure]:
    """Every job, each in a process of its own, ``parallel`` at a time; results in the jobs'
    order. The processes are forked from servers that imported the toolkit once
    (``rknn_child --serve``); a model that takes longer than ``timeout_s`` is killed."""
    pending: queue.Queue[int] = queue.Queue()
    for index in range(len(jobs)):
        pending.put(index)
    outcomes: dict[int, BuildResult | BuildFailure] = {}

    def work() -> None:
        server = _Server()
        try:
            while True:
                try:
                    index = pending.get_nowait()
                except queue.Empty:
                    return
                outcomes[index] = server.build(jobs[index], timeout_s)
        finally:
            server.close()

    workers = [threading.Thread(target=work) for _ in range(max(1, min(parallel, len(jobs))))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return [outcomes[index] for index in range(len(jobs))]


def _graph(proto: onnx.ModelProto) -> tuple[dict[str, tuple[int, ...]], tuple[str, ...]]:
    constants = {init.name for init in proto.graph.initializer}
    inputs = [v for v in proto.graph.input if v.name not in constants]

    def shape(value: onnx.ValueInfoProto) -> tuple[int, ...]:
        return tuple(int(d.dim_value) for d in value.type.tensor_type.shape.dim)

    graph = {v.name: shape(v) for v in (*inputs, *proto.graph.output)}
    return graph, tuple(v.name for v in inputs)


class RknnCompiler:
    toolkit = TOOLKIT
    version = TOOLKIT_VERSION
    described = f"Rockchip's compiler ({TOOLKIT}, the `rknn` extra)"
    install_described = (
        f"pip install --no-deps {TOOLKIT}=={TOOLKIT_VERSION}: the `rknn` extra "
        "brings the dependencies its ONNX path imports (a CPU torch instead of its torch<=2.4.0 "
        "pin), which pip extras cannot say. Then checks that it imports."
    )
    install_hint = "(install the `rknn` extra: pip install 'npu-hil[rknn]')"
    suffix = ".rknn"
    artifact_key = "rknn"
    precisions: tuple[str, ...] = PRECISIONS
    precision_help = "default: int8, or float16 on RK2118 (which builds nothing else)"

    # What the compiler hook asks that the driver answers as it is.
    default_precision = staticmethod(default_precision)
    check_precision = staticmethod(check_precision)
    check_dataset = staticmethod(check_dataset)
    probe = staticmethod(probe)
    write_calibration = staticmethod(write_calibration)
    read_dataset = staticmethod(read_dataset)

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
    ) -> BuildJob:
        return BuildJob(
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
                dataset=tuple(write_samples(work / "calibration", calibration))
                if precision == "int8"
                else (),
                simulate=tuple(write_samples(work / "samples", samples)),
            )
            outcome = build_one(job)
            if isinstance(outcome, BuildFailure):
                raise CompilerError(outcome.message)
            with np.load(job.simulated) as kept:
                return [
                    {name: np.asarray(kept[f"s{k}_o{j}"]) for j, name in enumerate(outputs)}
                    for k in range(len(samples))
                ]

    def build(
        self, jobs: Sequence[CompileJob], parallel: int
    ) -> tuple[list[CompileResult], list[CompileFailure]]:
        mine = [job for job in jobs if isinstance(job, BuildJob)]
        if len(mine) != len(jobs):
            raise TypeError("RknnCompiler.build takes the jobs RknnCompiler.job made")
        outcomes = build_all(mine, parallel=parallel)
        results: list[CompileResult] = [o for o in outcomes if isinstance(o, BuildResult)]
        failures: list[CompileFailure] = [o for o in outcomes if isinstance(o, BuildFailure)]
        return results, failures


COMPILER = RknnCompiler()
