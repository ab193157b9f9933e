"""What a Kneron ``.nef`` file can be shown to be before it is loaded (no NEF file was available
here to measure): its CRC-32 and FlatBuffers root offset, as Kneron PLUS checks them first
(docs/model-developer/preflight.md, "From the file")."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from npu_hil.harness.errors import ArtifactError
from npu_hil.targets.artifact import ArtifactInfo, open_bounded

__all__ = ["MAX_NEF_BYTES", "read_kneron_model"]

MAX_NEF_BYTES = 1 << 30
"""The largest NEF checked (a KL730's model memory is far smaller)."""
_CHUNK = 1 << 20

UNREAD = (
    "target chip and toolchain version: the NEF header is a FlatBuffers table whose schema is "
    "not public; PLUS reports both once the model is loaded (kp_model_nef_descriptor_t)"
)


def read_kneron_model(path: Path) -> ArtifactInfo:
    """Check the NEF's CRC and root offset; ArtifactError for a file that is not a NEF."""
    where = str(path)
    handle, size = open_bounded(path, "a compiled Kneron model (.nef)")
    with handle:
        if size < 12:
            raise ArtifactError(
                f"{where}: not a NEF (expected a FlatBuffers root offset and a trailing CRC-32, "
                f"the file has {size} bytes)"
            )
        if size > MAX_NEF_BYTES:
            raise ArtifactError(
                f"{where}: expected a NEF of at most {MAX_NEF_BYTES} bytes, got {size}"
            )
        first = handle.read(min(size - 4, _CHUNK))
        (root,) = struct.unpack_from("<I", first, 0)
        if root < 4 or root >= size - 4:
            raise ArtifactError(
                f"{where}: not a NEF: the FlatBuffers root offset at byte 0 is {root}, outside "
                f"the file's {size - 4} bytes of content"
            )
        crc = zlib.crc32(first)
        left = size - 4 - len(first)
        while left > 0:
            chunk = handle.read(min(left, _CHUNK))
            if not chunk:
                raise ArtifactError(f"{where}: the file ended while its CRC was computed")
            crc = zlib.crc32(chunk, crc)
            left -= len(chunk)
        (stored,) = struct.unpack("<I", handle.read(4))
    if stored != crc:
        raise ArtifactError(
            f"{where}: not an intact NEF: the CRC-32 stored in its last 4 bytes is "
            f"{stored:#010x}, the content's is {crc:#010x}"
        )
    return ArtifactInfo(
        path=where,
        vendor="kneron",
        format="nef",
        format_version=None,
        toolkit_version=None,
        target_platforms=(),
        extras={"crc": f"{crc:#010x}"},
        unverified=(UNREAD,),
    )
