"""Reference models on disk: save and load ONNX files."""

from __future__ import annotations

import os
from pathlib import Path

import onnx


def save(model: onnx.ModelProto, path: str | os.PathLike[str]) -> Path:
    """Write ``model`` to ``path`` (parent folders created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(target))
    return target


def load(path: str | os.PathLike[str]) -> onnx.ModelProto:
    """Read an ONNX model from ``path``."""
    return onnx.load_model(str(path))
