"""The pipeline's first step: which model a run uses. The reference ONNX on this machine (the
oracle's model) and what the board loads: the reference itself on a simulated board, the compiled
artifact the manifest lists for the board's target on a real one."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import numpy as np
import onnx

from npu_hil.harness.errors import LayoutError
from npu_hil.harness.farm.session import BoardSession
from npu_hil.harness.folders import private_dir
from npu_hil.harness.models import MODELS, Manifest, ManifestError, build
from npu_hil.harness.models.preprocessing import Preprocessing, prepare

__all__ = [
    "ModelToRun",
    "input_digest",
    "model_to_run",
    "preprocessed",
    "resolve_model",
    "safe_name",
    "sha256",
]


class ModelToRun(NamedTuple):
    """What a board runs for a model: the reference ONNX on this machine, what the board loads,
    the label, the arrays the board is given and how the vendor takes them (with preprocessing)."""

    reference: Path
    deployed: Path
    label: str
    given: dict[str, np.ndarray]
    notes: tuple[str, ...]


def model_to_run(
    session: BoardSession,
    model: str | os.PathLike[str] | onnx.ModelProto,
    given: Mapping[str, np.ndarray],
    declared: Preprocessing | Mapping[str, Preprocessing] | None,
) -> ModelToRun:
    """:func:`resolve_model`, or :func:`preprocessed` when the inputs' preprocessing is declared."""
    if declared is None:
        return ModelToRun(*resolve_model(session, model, given), dict(given), ())
    return preprocessed(session, model, given, declared)


def resolve_model(
    session: BoardSession,
    model: str | os.PathLike[str] | onnx.ModelProto,
    given: Mapping[str, np.ndarray],
) -> tuple[Path, Path, str]:
    """(reference ONNX on this machine, what the board loads, a label). A simulated board loads
    the reference itself; a real one the compiled artifact the manifest lists for its target,
    and then the reference is the ONNX that artifact was compiled from."""
    if not session.simulated and isinstance(model, str) and model in _manifest(session).models:
        entry = _manifest(session).model(model)
        return entry.require_onnx(), entry.require_artifact(session.target), model
    reference, label = _reference_model(session, model, given)
    if session.simulated:
        return reference, reference, label
    manifest = _manifest(session)
    # `npu-hil models build` lists each reference model once per shape; the ONNX built here for
    # this shape is byte-identical to the one that entry was compiled from.
    digest = sha256(reference)
    for entry in manifest.models.values():
        if entry.onnx.resolve() == reference.resolve() or (
            entry.onnx.is_file() and sha256(entry.onnx) == digest
        ):
            return entry.onnx, entry.require_artifact(session.target), label
    raise ManifestError(
        f"{manifest.source}: no model for {label!r} ({reference}); a real board runs the "
        "compiled artifacts the manifest lists"
    )


def preprocessed(
    session: BoardSession,
    model: str | os.PathLike[str] | onnx.ModelProto,
    given: Mapping[str, np.ndarray],
    declared: Preprocessing | Mapping[str, Preprocessing],
) -> ModelToRun:
    """:func:`resolve_model` for inputs whose preprocessing is declared: the reference is the
    model with the vendor's normalization in front; a simulated board loads it, a real one the
    manifest's artifact compiled with that normalization (``npu-hil models build --mean --std``)."""
    entry = None
    if not session.simulated and isinstance(model, str):
        entry = _manifest(session).models.get(model)
    if entry is not None:
        source, label = onnx.load(str(entry.require_onnx())), str(model)
    elif isinstance(model, onnx.ModelProto):
        source, label = model, _proto_label(model)  # only the prepared model is saved
    else:
        path, label = _reference_model(session, model, given)
        source = onnx.load(str(path))
    prepared = prepare(session.target, declared, source, given)
    reference = _saved(prepared.model, session.workdir / "models", f"{label}-prepared")
    if entry is not None:
        deployed = entry.require_artifact(session.target)
    elif session.simulated:
        deployed = reference
    else:
        raise ManifestError(
            f"{session.name}: a real board runs a compiled artifact; name the manifest's model "
            f"(built with --mean/--std) instead of {label!r}"
        )
    return ModelToRun(reference, deployed, label, prepared.inputs, prepared.notes)


def _manifest(session: BoardSession) -> Manifest:
    if session.manifest is None:
        raise ManifestError(
            f"{session.name}: a real board needs a compiled artifact, and the inventory names "
            "no model manifest"
        )
    return session.manifest


def _reference_model(
    session: BoardSession,
    model: str | os.PathLike[str] | onnx.ModelProto,
    given: Mapping[str, np.ndarray],
) -> tuple[Path, str]:
    """The reference ONNX on this machine (built and saved for a name) and a label for it."""
    models_dir = session.workdir / "models"
    if isinstance(model, onnx.ModelProto):
        label = _proto_label(model)
        return _saved(model, models_dir, label), label
    if isinstance(model, str) and model in MODELS:
        shape = tuple(next(iter(given.values())).shape)
        # A reference model is the same bytes for a name and shape: built and saved once.
        key = (str(models_dir), model, shape)
        saved = _BUILT.get(key)
        if saved is None or not saved.is_file():
            proto = build(model, shape)
            saved = _saved(proto, models_dir, f"{model}-{'x'.join(map(str, shape))}")
            if len(_BUILT) >= _CACHE_SIZE:
                _BUILT.pop(next(iter(_BUILT)))
            _BUILT[key] = saved
        return saved, model
    path = Path(model)
    if not path.is_file():
        raise LayoutError(
            f"run_model: {model!r} is neither a reference model ({', '.join(MODELS)}) nor an "
            "ONNX file that exists"
        )
    return path, path.stem


def _proto_label(model: onnx.ModelProto) -> str:
    return safe_name(model.graph.name or "model")


def _saved(proto: onnx.ModelProto, folder: Path, stem: str) -> Path:
    """The model on disk, named by its content. Written to a temporary name and renamed, so a
    process sharing the folder (an xdist worker) never reads half a file."""
    data = proto.SerializeToString()
    path = folder / f"{stem}-{hashlib.sha256(data).hexdigest()[:16]}.onnx"
    if not path.is_file():
        private_dir(folder)  # the models cache, in the board's own folder
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path


_BUILT: dict[tuple[str, str, tuple[int, ...]], Path] = {}
_CACHE_SIZE = 256


def input_digest(inputs: Mapping[str, np.ndarray]) -> str:
    """What the test fed the model, in 32 hex digits: each input's name, dtype, shape and bytes,
    in name order. Two runs of a case with the same model and this digest ran the same thing,
    so their figures are one baseline's (:mod:`npu_hil.harness.history.baseline`)."""
    digest = hashlib.blake2b(digest_size=16)
    for name in sorted(inputs):
        array = np.ascontiguousarray(inputs[name])
        digest.update(f"{name}\0{array.dtype.str}\0{array.shape}\0".encode())
        digest.update(array.reshape(-1).view(np.uint8).data)
    return digest.hexdigest()


def sha256(path: Path) -> str:
    """The file's sha256, computed once per content: a file whose inode, size and mtime did not
    change is the same file (every job of a run names its model again)."""
    info = path.stat()
    return _sha256((str(path.resolve()), info.st_ino, info.st_size, info.st_mtime_ns))


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _sha256(key: tuple[str, int, int, int]) -> str:
    """The sha256 of the file ``key`` names first (its inode, size and mtime: the cache's key)."""
    return hashlib.sha256(Path(key[0]).read_bytes()).hexdigest()


def safe_name(text: str) -> str:
    """``text`` as a file-name part: anything but letters, digits, ``.``, ``_``, ``-`` replaced."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)[:120]
