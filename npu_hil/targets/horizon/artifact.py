"""What a Horizon ``.bin`` / ``.hbm`` model file can be shown to be before it is loaded: no
public document gives its byte layout, so only what it is not (docs/model-developer/preflight.md,
"From the file")."""

from __future__ import annotations

from pathlib import Path

from npu_hil.harness.errors import ArtifactError
from npu_hil.targets.artifact import MAX_HEADER_BYTES, ArtifactInfo, open_bounded

__all__ = ["read_horizon_model"]

UNREAD = (
    "BPU march, model names and toolchain version: the .bin/.hbm layout is not publicly "
    "documented; the runtime names the models once the file is loaded"
)

_OTHER_FORMATS = {b"RKNN": "an RKNN model", b"PK\x03\x04": "a ZIP archive"}


def read_horizon_model(path: Path) -> ArtifactInfo:
    where = str(path)
    handle, size = open_bounded(path, "a compiled Horizon model (.bin/.hbm)")
    with handle:
        head = handle.read(min(size, MAX_HEADER_BYTES))
    if not head:
        raise ArtifactError(f"{where}: expected a compiled Horizon model, the file is empty")
    for magic, what in _OTHER_FORMATS.items():
        if head.startswith(magic):
            raise ArtifactError(
                f"{where}: expected a compiled Horizon model, the file is {what} "
                f"(it starts with {magic!r})"
            )
    if _looks_like_onnx(head):
        raise ArtifactError(
            f"{where}: expected a compiled Horizon model, the file is an ONNX model (its first "
            "field is an ONNX ir_version); a Horizon board loads the compiled .bin/.hbm"
        )
    return ArtifactInfo(
        path=where,
        vendor="horizon",
        format=path.suffix.lower().lstrip(".") or "bin",
        format_version=None,
        toolkit_version=None,
        target_platforms=(),
        unverified=(UNREAD,),
    )


_ONNX_NEXT_TAGS = (0x12, 0x1A, 0x22, 0x28, 0x32, 0x3A, 0x42)
"""The protobuf tags of ModelProto fields 2-8, one of which follows ``ir_version``."""


def _looks_like_onnx(head: bytes) -> bool:
    """ONNX files start with field 1 (``ir_version``, a varint: tag byte 0x08) and a small
    version, then the next field present (protobuf writes fields in number order)."""
    return len(head) >= 4 and head[0] == 0x08 and 3 <= head[1] <= 15 and head[2] in _ONNX_NEXT_TAGS
