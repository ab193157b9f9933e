"""The reference models a real board needs compiled (``npu-hil models build``): each at the shapes
the regression suite runs it with, one manifest entry per model and shape, named
``<model>-<N>x<C>x<H>x<W>``; the runner finds an entry by the reference model's bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import onnx

from npu_hil.harness.models.builders import MODELS, build
from npu_hil.harness.models.manifest import (
    Compiled,
    CompiledTensor,
    Manifest,
    ManifestError,
    ModelEntry,
    load_manifest,
    save_manifest,
)
from npu_hil.targets.compiler import (
    CompiledTensorInfo,
    CompileJob,
    CompilerError,
    CompileResult,
    ModelCompiler,
    Normalize,
)
from npu_hil.targets.registry import unit_for

REGRESSION_SHAPES: tuple[tuple[int, int, int, int], ...] = ((1, 3, 6, 10), (1, 16, 5, 7))
"""The NCHW input shapes the regression suite runs every reference model at: an image-like
three-channel input and a sixteen-channel one (a compiler may lay the two out differently:
pixel by pixel, or in blocks of channels)."""

MANIFEST_NAME = "manifest.json"


def entry_key(model: str, shape: Sequence[int]) -> str:
    return f"{model}-{'x'.join(map(str, shape))}"


def graph_of(proto: onnx.ModelProto) -> tuple[dict[str, tuple[int, ...]], tuple[str, ...]]:
    """Graph tensor names → shapes (inputs first), and the input names in order."""
    constants = {init.name for init in proto.graph.initializer}

    def shape(value: onnx.ValueInfoProto) -> tuple[int, ...]:
        return tuple(int(d.dim_value) for d in value.type.tensor_type.shape.dim)

    inputs = [v for v in proto.graph.input if v.name not in constants]
    graph = {v.name: shape(v) for v in (*inputs, *proto.graph.output)}
    return graph, tuple(v.name for v in inputs)


def compiler_for(target: str) -> ModelCompiler:
    """The compiler of ``target``'s vendor; a vendor without one is a CompilerError."""
    compiler = unit_for(target).compiler
    if compiler is None:
        raise CompilerError(f"{target}: its vendor has no model compiler")
    return compiler


def plan(
    target: str,
    precision: str,
    out: Path,
    *,
    models: Iterable[str] | None = None,
    shapes: Sequence[Sequence[int]] = REGRESSION_SHAPES,
    dataset: Path | None = None,
) -> list[CompileJob]:
    """One build job per model and shape, made by the target's compiler; writes the ONNX files
    (and a calibration set unless ``dataset`` gives one: ``DIR/<entry key>/`` or
    ``DIR/<model>/``, else DIR itself)."""
    names = list(models) if models is not None else list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise ManifestError(f"unknown reference model {unknown[0]!r}; known: {', '.join(MODELS)}")
    compiler = compiler_for(target)
    jobs: list[CompileJob] = []
    for name in names:
        for shape in shapes:
            key = entry_key(name, shape)
            # The same bytes the runner writes for this model and shape: it matches by content.
            proto = build(name, shape)
            data = proto.SerializeToString()
            jobs.append(
                _job(compiler, target, precision, out, key, proto, data, dataset, (key, name))
            )
    return jobs


def _job(
    compiler: ModelCompiler,
    target: str,
    precision: str,
    out: Path,
    key: str,
    proto: onnx.ModelProto,
    data: bytes,
    dataset: Path | None,
    subfolders: Sequence[str],
    normalize: Normalize | None = None,
) -> CompileJob:
    """One model's build job: ``data`` written to ``out/onnx/<key>.onnx`` (the runner matches a
    test's model to its entry by these bytes) and an int8 build's calibration set: the first of
    ``subfolders`` of ``dataset`` that exists (else ``dataset`` itself), or a generated one under
    ``out/calibration/<key>``."""
    onnx_path = out / "onnx" / f"{key}.onnx"
    onnx_path.parent.mkdir(parents=True, exist_ok=True)
    onnx_path.write_bytes(data)
    graph, inputs = graph_of(proto)
    shapes = {n: graph[n] for n in inputs}
    samples: list[dict[str, Path]] = []
    if precision == "int8" and dataset is None:
        samples = compiler.write_calibration(out / "calibration" / key, shapes)
    elif precision == "int8" and dataset is not None:
        folder = next((d for d in (dataset / s for s in subfolders) if d.is_dir()), dataset)
        samples = compiler.read_dataset(folder, shapes)
    return compiler.job(key, onnx_path, target, precision, out, graph, inputs, samples, normalize)


def user_key(path: Path, data: bytes, precision: str, normalize: Normalize | None) -> str:
    """A user's model's entry: its file's stem and a hash of what the build depends on (the
    model's bytes, the precision, the mean and std), so an unchanged model is found again."""
    digest = hashlib.sha256(data)
    digest.update(f"|{precision}|{normalize!r}".encode())
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in path.stem)[:40] or "model"
    return f"{stem}-{digest.hexdigest()[:12]}"


def plan_files(
    target: str,
    precision: str,
    out: Path,
    paths: Sequence[Path],
    *,
    dataset: Path | None = None,
    normalize: Normalize | None = None,
) -> list[CompileJob]:
    """One build job per user's ONNX file: the file copied to ``out/onnx/<key>.onnx`` (the
    runner matches a test's model to its entry by these bytes) and its calibration set (the
    ``dataset`` folder, ``DIR/<stem>/`` first, else a generated one)."""
    compiler = compiler_for(target)
    jobs: list[CompileJob] = []
    for path in paths:
        try:
            data = Path(path).read_bytes()
            proto = onnx.load_model_from_string(data)
        except OSError as exc:
            raise ManifestError(f"{path}: cannot read the model: {exc.strerror or exc}") from None
        except Exception as exc:  # onnx raises DecodeError and friends
            raise ManifestError(f"{path}: not an ONNX model: {exc}") from None
        graph, inputs = graph_of(proto)
        symbolic = [n for n in inputs if not all(d > 0 for d in graph[n])]
        if symbolic:
            raise ManifestError(
                f"{path}: input {symbolic[0]} has a symbolic or unknown size "
                f"{list(graph[symbolic[0]])}; the compiler needs static shapes (export with a "
                "fixed batch)"
            )
        if normalize is not None:
            for name in inputs:
                shape = graph[name]
                if len(shape) == 4 and shape[1] != len(normalize[0]):
                    raise ManifestError(
                        f"{path}: input {name} has {shape[1]} channels; --mean and --std give "
                        f"{len(normalize[0])}"
                    )
        key = user_key(Path(path), data, precision, normalize)
        stem = (Path(path).stem,)
        jobs.append(
            _job(compiler, target, precision, out, key, proto, data, dataset, stem, normalize)
        )
    return jobs


def cached(manifest: Path, job: CompileJob) -> bool:
    """Whether the manifest lists ``job``'s model compiled for its target and the file is
    still there (the key already names the model's content and build options)."""
    if not manifest.is_file():
        return False
    entry = load_manifest(manifest).models.get(job.key)
    if entry is None or job.target not in entry.compiled:
        return False
    artifact = entry.artifacts.get(job.target)
    return artifact is not None and Path(artifact).is_file()


def compiled_tensor(tensor: CompiledTensorInfo) -> CompiledTensor:
    """A tensor the compiled file states, as the manifest keeps it."""
    return CompiledTensor(tensor.name, tensor.dtype, tensor.shape, tensor.native, tensor.size)


def record(
    manifest_path: Path,
    results: Sequence[CompileResult],
    models: dict[str, str],
    failed: Sequence[CompileJob] = (),
) -> Path:
    """Add the built models to the manifest at ``manifest_path`` (created, or merged with what
    it lists for other targets and models); ``models`` maps entry keys to reference names. A
    model that ``failed`` loses what the manifest listed for that target (its file is gone)."""
    entries: dict[str, ModelEntry] = {}
    if manifest_path.is_file():
        entries = dict(load_manifest(manifest_path).models)
    for job in failed:
        old = entries.get(job.key)
        if old is not None:
            artifacts = {t: p for t, p in old.artifacts.items() if t != job.target}
            compiled = {t: c for t, c in old.compiled.items() if t != job.target}
            entries[job.key] = dataclasses.replace(old, artifacts=artifacts, compiled=compiled)
    for result in results:
        job = result.job
        old = entries.get(job.key)
        artifacts = dict(old.artifacts) if old else {}
        compiled = dict(old.compiled) if old else {}
        artifacts[job.target] = job.artifact
        compiled[job.target] = Compiled(
            result.compiler,
            job.precision,
            tuple(compiled_tensor(t) for t in result.inputs),
            tuple(compiled_tensor(t) for t in result.outputs),
        )
        entries[job.key] = ModelEntry(
            job.key,
            job.onnx,
            artifacts,
            str(manifest_path),
            models.get(job.key),
            tuple(job.graph[job.inputs[0]]),
            compiled,
            dict(old.accuracy) if old else {},  # a user's thresholds hold for every target
        )
    return save_manifest(Manifest(entries, str(manifest_path)), manifest_path)
