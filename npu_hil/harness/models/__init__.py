"""Reference models: built with ``onnx.helper``, run on the host by onnxruntime, and listed with
their compiled artifacts per target in a manifest."""

from __future__ import annotations

from npu_hil.harness.models.builders import (
    MODELS,
    build,
    conv3x3,
    deconv,
    depthwise,
    load,
    save,
)
from npu_hil.harness.models.manifest import Manifest, ManifestError, ModelEntry, load_manifest
from npu_hil.harness.models.reference import ModelInputError, reference_outputs

__all__ = [
    "MODELS",
    "Manifest",
    "ManifestError",
    "ModelEntry",
    "ModelInputError",
    "build",
    "conv3x3",
    "deconv",
    "depthwise",
    "load",
    "load_manifest",
    "reference_outputs",
    "save",
]
