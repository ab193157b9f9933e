"""What a vendor's model compiler is to ``npu-hil models build`` and ``models install-compiler``
(``Vendor.compiler``): the harness plans the jobs (the reference models at the regression shapes,
:mod:`npu_hil.harness.models.compile_set`) and writes the manifest; the vendor's compiler says
what it builds, makes the jobs, runs them and reads back the tensors its files state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from npu_hil.harness.errors import NpuHilError

__all__ = [
    "CompileFailure",
    "CompileJob",
    "CompileResult",
    "CompiledTensorInfo",
    "CompilerError",
    "ModelCompiler",
]


class CompilerError(NpuHilError):
    """The compiler cannot be run here, or was asked for what a target cannot build."""


class CompiledTensorInfo(Protocol):
    """One model input or output as the compiler laid it out (kept in the manifest)."""

    @property
    def name(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def native(self) -> tuple[int, ...]: ...
    @property
    def size(self) -> int: ...


Normalize = tuple[tuple[float, ...], tuple[float, ...]]
"""(mean, std) per channel, in the input's own units: ``x' = (x - mean) / std``."""


class CompileJob(Protocol):
    """One reference model at one shape for one target."""

    @property
    def key(self) -> str: ...
    @property
    def onnx(self) -> Path: ...
    @property
    def target(self) -> str: ...
    @property
    def precision(self) -> str: ...
    @property
    def graph(self) -> Mapping[str, tuple[int, ...]]:
        """Graph input and output names and shapes (inputs first, in order)."""

    @property
    def inputs(self) -> tuple[str, ...]: ...
    @property
    def artifact(self) -> Path:
        """Where the compiled model is written."""


class CompileResult(Protocol):
    @property
    def job(self) -> CompileJob: ...
    @property
    def inputs(self) -> tuple[CompiledTensorInfo, ...]: ...
    @property
    def outputs(self) -> tuple[CompiledTensorInfo, ...]: ...
    @property
    def compiler(self) -> str:
        """The compiler and its version, as the manifest records them."""


class CompileFailure(Protocol):
    @property
    def job(self) -> CompileJob: ...
    @property
    def message(self) -> str:
        """One model's error, with where its build log is."""


class ModelCompiler(Protocol):
    """A vendor's compiler, driven once per model in a process of its own."""

    toolkit: str
    """The compiler's distribution name (installed by ``npu-hil models install-compiler``)."""
    version: str
    """The version this project is checked against."""
    described: str
    """The compiler in the help text: whose it is, its name and the extra that brings it."""
    install_described: str
    """What ``npu-hil models install-compiler`` does, for its help."""
    install_hint: str
    """What to install when the compiler does not import, in parentheses."""
    suffix: str
    """The compiled files' suffix."""
    artifact_key: str
    """The compiled file's name in ``npu-hil models build --json``'s output."""
    precisions: tuple[str, ...]
    """Every precision it builds for some target."""
    precision_help: str
    """Which precision a target gets when the user names none."""

    def default_precision(self, target: str) -> str: ...
    def check_precision(self, target: str, precision: str) -> None:
        """A CompilerError when ``target`` cannot be built at ``precision``."""

    def check_dataset(self, folder: Path) -> None:
        """A CompilerError when ``--dataset`` is not a folder the compiler can read."""

    def probe(self) -> str | None:
        """None when the compiler can run here, else why not (one line)."""

    def write_calibration(
        self, folder: Path, inputs: Mapping[str, tuple[int, ...]]
    ) -> list[dict[str, Path]]:
        """A generated calibration set for a model with these inputs (one file per input and
        sample)."""

    def read_dataset(
        self, folder: Path, inputs: Mapping[str, tuple[int, ...]]
    ) -> list[dict[str, Path]]:
        """The user's calibration set for a model with these inputs."""

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
    ) -> CompileJob:
        """The job compiling ``onnx`` for ``target`` into ``out``; ``normalize`` bakes a
        per-channel mean and std into the compiled model (its input then takes raw pixels)."""

    def build(
        self, jobs: Sequence[CompileJob], parallel: int
    ) -> tuple[Sequence[CompileResult], Sequence[CompileFailure]]:
        """Every job, ``parallel`` at a time: what was built, and what failed (in job order)."""
