"""The model manifest: each model's ONNX file and its compiled artifact per target, as JSON or
YAML (docs/model-developer/models-build.md, "The manifest"); relative paths start at its folder.
Every message names the file and the key path (``models.conv3x3.artifacts.rk3588``).
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from typing_extensions import NotRequired, TypedDict

from npu_hil.harness.errors import NpuHilError
from npu_hil.targets.registry import all_targets, unit_for

VERSION = 1


_TOP_KEYS = ("version", "models")
_MODEL_KEYS = ("onnx", "artifacts", "model", "shape", "compiled", "accuracy")
ACCURACY_KEYS = ("cosine_min", "snr_db_min", "max_abs_err_max", "max_rel_err_max")
"""The accuracy thresholds a model entry may set (``npu_hil.harness.diff.accuracy.Thresholds``)."""
_COMPILED_KEYS = ("compiler", "precision", "inputs", "outputs")
_TENSOR_KEYS = ("name", "dtype", "shape", "native", "size")


class CompiledTensorDocument(TypedDict):
    """A compiled input or output in a manifest entry's ``compiled.<target>``."""

    name: str
    dtype: str
    shape: list[int]
    native: list[int]
    size: int


class CompiledDocument(TypedDict):
    """A manifest entry's ``compiled.<target>``: what the compiler stated."""

    compiler: str
    precision: str
    inputs: list[CompiledTensorDocument]
    outputs: list[CompiledTensorDocument]


class ModelDocument(TypedDict):
    """One model of the manifest file (``Manifest.to_dict``'s ``models.<name>``)."""

    onnx: str
    model: NotRequired[str]
    shape: NotRequired[list[int]]
    artifacts: dict[str, str]
    compiled: NotRequired[dict[str, CompiledDocument]]
    accuracy: NotRequired[dict[str, float]]


class ManifestDocument(TypedDict):
    """The model manifest file (models.json), as :meth:`Manifest.to_dict` writes it."""

    version: int
    models: dict[str, ModelDocument]


class ManifestError(NpuHilError):
    """A manifest that cannot be read, or a model or artifact it does not provide."""


@dataclass(frozen=True)
class CompiledTensor:
    """A compiled model's input or output as its compiler laid it out."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    native: tuple[int, ...]
    size: int

    def to_dict(self) -> CompiledTensorDocument:
        data = {**asdict(self), "shape": list(self.shape), "native": list(self.native)}
        return cast(CompiledTensorDocument, data)


@dataclass(frozen=True)
class Compiled:
    """What the compiler stated for one target: its version, the precision, native tensors."""

    compiler: str
    precision: str
    inputs: tuple[CompiledTensor, ...]
    outputs: tuple[CompiledTensor, ...]

    def to_dict(self) -> CompiledDocument:
        return {
            "compiler": self.compiler,
            "precision": self.precision,
            "inputs": [t.to_dict() for t in self.inputs],
            "outputs": [t.to_dict() for t in self.outputs],
        }


@dataclass(frozen=True)
class ModelEntry:
    """One model of a manifest: its ONNX file and its compiled artifacts by target."""

    name: str
    onnx: Path
    artifacts: dict[str, Path] = field(default_factory=dict)
    source: str = "<manifest>"
    model: str | None = None
    """The reference model it was built from, when it is one."""
    shape: tuple[int, ...] | None = None
    """The input shape the reference model was built for."""
    compiled: dict[str, Compiled] = field(default_factory=dict)
    accuracy: dict[str, float] = field(default_factory=dict)
    """Thresholds every output of the model must meet against the float reference
    (``{"cosine_min": 0.99, "snr_db_min": 30}``); empty: the figures are reported only."""

    def artifact(self, target: str) -> Path | None:
        """The compiled artifact listed for ``target``, or None when there is none."""
        _require_target(target, f"{self.source}: models.{self.name}")
        return self.artifacts.get(target)

    def require_artifact(self, target: str) -> Path:
        """The compiled artifact for ``target``; ManifestError when unlisted or missing on disk."""
        path = self.artifact(target)
        where = f"{self.source}: models.{self.name}.artifacts"
        if path is None:
            listed = ", ".join(sorted(self.artifacts)) or "none"
            raise ManifestError(
                f"{where}: no compiled artifact for {target} (expected a "
                f"{_suffix_text(target)} file; artifacts listed for: {listed}). Compile the "
                f"model with the vendor's toolchain, or run it on a simulated board"
            )
        if not path.is_file():
            raise ManifestError(f"{where}.{target}: {path} does not exist")
        return path

    def require_onnx(self) -> Path:
        """The reference model's ONNX file; ManifestError when it is missing on disk."""
        if not self.onnx.is_file():
            raise ManifestError(
                f"{self.source}: models.{self.name}.onnx: {self.onnx} does not exist"
            )
        return self.onnx


@dataclass(frozen=True)
class Manifest:
    """A loaded manifest: models by name."""

    models: dict[str, ModelEntry]
    source: str = "<manifest>"

    def model(self, name: str) -> ModelEntry:
        try:
            return self.models[name]
        except KeyError:
            known = ", ".join(sorted(self.models)) or "none"
            raise ManifestError(
                f"{self.source}: no model {name!r} in the manifest (models: {known})"
            ) from None

    def to_dict(self, relative_to: str | os.PathLike[str] | None = None) -> ManifestDocument:
        """The manifest as data (paths relative to ``relative_to`` when given)."""

        def text(path: Path) -> str:
            if relative_to is not None and path.is_relative_to(relative_to):
                return str(path.relative_to(relative_to))
            return str(path)

        def model(entry: ModelEntry) -> ModelDocument:
            # built in the file's key order: onnx, model, shape, artifacts, compiled, accuracy
            data: dict[str, Any] = {"onnx": text(entry.onnx)}
            if entry.model is not None:
                data["model"] = entry.model
            if entry.shape is not None:
                data["shape"] = list(entry.shape)
            data["artifacts"] = {t: text(p) for t, p in sorted(entry.artifacts.items())}
            if entry.compiled:
                data["compiled"] = {t: c.to_dict() for t, c in sorted(entry.compiled.items())}
            if entry.accuracy:
                data["accuracy"] = dict(entry.accuracy)
            return cast(ModelDocument, data)

        return {
            "version": VERSION,
            "models": {name: model(entry) for name, entry in sorted(self.models.items())},
        }


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read and check a manifest file (``.json``, ``.yaml`` or ``.yml``)."""
    file = Path(path)
    source = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(f"{source}: no such manifest file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{source}: cannot read the manifest: {exc}") from exc
    if file.suffix.lower() in (".yaml", ".yml"):
        data = _parse_yaml(text, source)
    else:
        data = _parse_json(text, source)
    return parse_manifest(data, base=file.parent, source=source)


def save_manifest(manifest: Manifest, path: str | os.PathLike[str]) -> Path:
    """Write ``manifest`` as JSON, paths relative to the file's folder where they can be."""
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps(manifest.to_dict(file.parent), indent=2) + "\n", encoding="utf-8")
    return file


def parse_manifest(
    data: Any, *, base: str | os.PathLike[str] = ".", source: str = "<manifest>"
) -> Manifest:
    """Check manifest data (as parsed from JSON/YAML) and resolve its paths against ``base``."""
    root = Path(base)
    top = _mapping(data, source, "the manifest")
    _known_keys(top, _TOP_KEYS, source, "")
    version = top.get("version")
    if version != VERSION:
        raise ManifestError(f"{source}: version: expected {VERSION}, got {version!r}")
    models = _mapping(top.get("models"), source, "models")
    entries: dict[str, ModelEntry] = {}
    for name, raw in models.items():
        where = f"models.{name}"
        if not isinstance(name, str) or not name:
            raise ManifestError(f"{source}: models: model names must be strings, got {name!r}")
        entry = _mapping(raw, source, where)
        _known_keys(entry, _MODEL_KEYS, source, where + ".")
        if "onnx" not in entry:
            raise ManifestError(f"{source}: {where}: missing 'onnx' (the reference model's file)")
        onnx_path = _path(entry["onnx"], root, source, where + ".onnx")
        if onnx_path.suffix.lower() != ".onnx":
            raise ManifestError(
                f"{source}: {where}.onnx: expected an .onnx file, got {entry['onnx']!r}"
            )
        artifacts: dict[str, Path] = {}
        raw_artifacts = entry.get("artifacts", {})
        if raw_artifacts is None:
            raw_artifacts = {}
        for target, value in _mapping(raw_artifacts, source, where + ".artifacts").items():
            key = f"{where}.artifacts.{target}"
            _require_target(target, f"{source}: {key}")
            path = _path(value, root, source, key)
            if path.suffix.lower() not in unit_for(target).artifact_suffixes:
                raise ManifestError(
                    f"{source}: {key}: expected a {_suffix_text(target)} file for {target}, "
                    f"got {value!r}"
                )
            artifacts[target] = path
        compiled: dict[str, Compiled] = {}
        raw_compiled = entry.get("compiled") or {}
        for target, value in _mapping(raw_compiled, source, where + ".compiled").items():
            key = f"{where}.compiled.{target}"
            _require_target(target, f"{source}: {key}")
            compiled[target] = _compiled(value, source, key)
        model = entry.get("model")
        if model is not None and (not isinstance(model, str) or not model):
            raise ManifestError(f"{source}: {where}.model: expected a model name, got {model!r}")
        shape = (
            None if entry.get("shape") is None else _ints(entry["shape"], source, where + ".shape")
        )
        accuracy = _accuracy(entry.get("accuracy"), source, where + ".accuracy")
        entries[name] = ModelEntry(
            name, onnx_path, artifacts, source, model, shape, compiled, accuracy
        )
    return Manifest(entries, source)


def _accuracy(value: Any, source: str, where: str) -> dict[str, float]:
    """``{cosine_min: 0.99, snr_db_min: 30}``: known keys, finite numbers, a cosine in [-1, 1],
    error limits >= 0."""
    if value is None:
        return {}
    data = _mapping(value, source, where)
    _known_keys(data, ACCURACY_KEYS, source, where + ".")
    limits: dict[str, float] = {}
    for key, raw in data.items():
        number = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else None
        if number is None or number != number or number in (float("inf"), float("-inf")):
            raise ManifestError(f"{source}: {where}.{key}: expected a finite number, got {raw!r}")
        if key == "cosine_min" and not -1.0 <= number <= 1.0:
            raise ManifestError(
                f"{source}: {where}.{key}: expected a cosine in [-1, 1], got {raw!r}"
            )
        if key.endswith("_max") and number < 0:
            raise ManifestError(f"{source}: {where}.{key}: expected a limit >= 0, got {raw!r}")
        limits[str(key)] = number
    return limits


def _compiled(value: Any, source: str, where: str) -> Compiled:
    data = _record(value, _COMPILED_KEYS, source, where)
    compiler, precision = data["compiler"], data["precision"]
    if not isinstance(compiler, str) or not compiler:
        raise ManifestError(f"{source}: {where}.compiler: expected text, got {compiler!r}")
    if precision not in ("int8", "float16"):
        raise ManifestError(
            f"{source}: {where}.precision: expected int8 or float16, got {precision!r}"
        )
    tensors: dict[str, tuple[CompiledTensor, ...]] = {}
    for role in ("inputs", "outputs"):
        items = data[role]
        if not isinstance(items, list) or not items:
            raise ManifestError(
                f"{source}: {where}.{role}: expected a list of tensors, got {items!r}"
            )
        tensors[role] = tuple(
            _tensor(item, source, f"{where}.{role}[{k}]") for k, item in enumerate(items)
        )
    return Compiled(compiler, precision, tensors["inputs"], tensors["outputs"])


def _tensor(value: Any, source: str, where: str) -> CompiledTensor:
    data = _record(value, _TENSOR_KEYS, source, where)
    name, dtype, size = data["name"], data["dtype"], data["size"]
    if not isinstance(name, str) or not name:
        raise ManifestError(f"{source}: {where}.name: expected a tensor name, got {name!r}")
    if dtype not in ("int8", "uint8", "int16", "float16", "float32"):
        raise ManifestError(f"{source}: {where}.dtype: expected a tensor type, got {dtype!r}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ManifestError(f"{source}: {where}.size: expected a byte count, got {size!r}")
    shape = _ints(data["shape"], source, where + ".shape")
    native = _ints(data["native"], source, where + ".native")
    return CompiledTensor(name, dtype, shape, native, size)


def _ints(value: Any, source: str, where: str) -> tuple[int, ...]:
    if (
        not isinstance(value, list)
        or not value
        or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in value)
    ):
        raise ManifestError(f"{source}: {where}: expected a list of positive sizes, got {value!r}")
    return tuple(value)


def _parse_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"{source}:{exc.lineno}:{exc.colno}"
        raise ManifestError(f"{where}: not valid JSON: {exc.msg}") from None


def _parse_yaml(text: str, source: str) -> Any:
    try:
        importlib.import_module("yaml")
    except ImportError:
        raise ManifestError(
            f"{source}: reading a YAML manifest needs PyYAML (pip install pyyaml); "
            "or write the manifest as JSON"
        ) from None
    from npu_hil.harness.yaml_reader import YamlProblem, load

    try:
        return load(text)
    except YamlProblem as problem:
        where = f"{source}:{problem.line}:{problem.column}"
        raise ManifestError(f"{where}: {problem.message}") from None


def _mapping(value: Any, source: str, where: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise ManifestError(
            f"{source}: {where}: expected a mapping, got {type(value).__name__} {value!r}"
        )
    return value


def _record(value: Any, keys: tuple[str, ...], source: str, where: str) -> Mapping[Any, Any]:
    """A mapping of exactly ``keys``."""
    data = _mapping(value, source, where)
    _known_keys(data, keys, source, where + ".")
    for key in keys:
        if key not in data:
            raise ManifestError(f"{source}: {where}: missing {key!r}")
    return data


def _known_keys(
    mapping: Mapping[Any, Any], known: tuple[str, ...], source: str, prefix: str
) -> None:
    unknown = sorted(str(k) for k in mapping if k not in known)
    if unknown:
        raise ManifestError(
            f"{source}: {prefix}{unknown[0]}: unknown key (expected {', '.join(known)})"
        )


def _path(value: Any, root: Path, source: str, where: str) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise ManifestError(f"{source}: {where}: expected a file path, got {value!r}")
    path = Path(value).expanduser()
    return path if path.is_absolute() else root / path


def _require_target(target: Any, where: str) -> None:
    if not isinstance(target, str) or target not in all_targets():
        raise ManifestError(
            f"{where}: unknown target {target!r}; known targets: {', '.join(all_targets())}"
        )


def _suffix_text(target: str) -> str:
    """What a compiled model looks like for ``target``: its vendor unit's toolchain suffixes."""
    return " or ".join(unit_for(target).artifact_suffixes)
