"""What a compiled ``.rknn`` file says about itself: its file-format version, the toolkit that
wrote it and the target platform it was built for.

The layout, measured from files rknn-toolkit2 2.5.0 wrote for every Rockchip target (the probe
models of ``tests/data/artifacts/rockchip``, and the grid of the observations); no vendor
document describes it:

- bytes 0-3 the magic ``RKNN``, 4-7 zero;
- bytes 8-15 the file-format version, a little-endian u64: ``6`` for the full model files
  (RK3566/RK3568, RK3588, RK3562, RK3576, RV1126B), ``0x1004`` for the "mini" ones (RV1103/RV1106,
  RV1103B/RV1106B, RK2118). Version 6 is the number librknnrt 1.3.0, 1.4.0 and 1.5.0 were
  reported to refuse with "Invalid RKNN model version 6" (see ``compatibility.json``);
- bytes 16-23 the length of the model data, which starts at byte 64 (the rest of the 64-byte
  header is not read: in mini files part of it is uninitialised memory that differs between two
  builds of the same model);
- after the model data a little-endian u64 length and a JSON object of that length, which ended
  exactly at the end of every file measured. It holds ``version`` (the toolkit's version,
  ``"2.5.0"``) and ``target_platform`` (a list: ``["rk3588"]``), beside the graph.
- The model data near its start holds the compiler's banner,
  ``2.5.0(compiler version: 2.5.0 (74ea630ce@...))``; read when it is within the first
  :data:`~npu_hil.targets.artifact.MAX_HEADER_BYTES`, else left unknown.

Files of toolkits before 2.5.0 were not available here: the reader takes the same layout and
says which field it found missing rather than guessing.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

from npu_hil.harness.errors import ArtifactError
from npu_hil.targets.artifact import MAX_HEADER_BYTES, MAX_INFO_BYTES, ArtifactInfo, open_bounded

__all__ = ["HEADER_BYTES", "MAGIC", "MINI_FORMAT", "read_rockchip_model"]

MAGIC = b"RKNN"
HEADER_BYTES = 64
"""The header before the model data."""
MINI_FORMAT = 0x1000
"""File-format versions from here on are the mini variant (2.5.0 writes 0x1004)."""

_COMPILER = re.compile(rb"compiler version: ([0-9][^\x00()]*(?:\([^\x00()]*\))?)")


def read_rockchip_model(path: Path) -> ArtifactInfo:
    """The ``.rknn`` file's own statement of its version and target; ArtifactError for a file
    that is not one, naming the offset where it stops being one."""
    where = str(path)
    handle, size = open_bounded(path, "a compiled RKNN model (.rknn)")
    with handle:
        head = handle.read(min(size, MAX_HEADER_BYTES))
        if len(head) < HEADER_BYTES or head[:4] != MAGIC:
            raise ArtifactError(
                f"{where}: not a compiled RKNN model (expected the magic {MAGIC!r} and a "
                f"{HEADER_BYTES}-byte header, got {head[:4]!r} and {size} bytes)"
            )
        version, data_len = struct.unpack_from("<QQ", head, 8)
        info_at = HEADER_BYTES + data_len
        if info_at + 8 > size:
            raise ArtifactError(
                f"{where}: the header says {data_len} bytes of model data from offset "
                f"{HEADER_BYTES}, and the model-info length after them at offset {info_at}; "
                f"the file has {size} bytes"
            )
        handle.seek(info_at)
        (info_len,) = struct.unpack("<Q", handle.read(8))
        if info_len > MAX_INFO_BYTES:
            raise ArtifactError(
                f"{where}: the model-info block at offset {info_at + 8} claims {info_len} bytes; "
                f"expected at most {MAX_INFO_BYTES}"
            )
        if info_at + 8 + info_len > size:
            raise ArtifactError(
                f"{where}: the model-info block at offset {info_at + 8} claims {info_len} bytes; "
                f"the file ends {size - info_at - 8} bytes after its start"
            )
        block = handle.read(info_len)
    document = _model_info(where, info_at + 8, block)
    unverified: list[str] = []
    toolkit = document.get("version")
    if not isinstance(toolkit, str) or not toolkit:
        unverified.append("the model info names no toolkit version ('version')")
        toolkit = None
    platforms = document.get("target_platform")
    if isinstance(platforms, str):
        platforms = [platforms]
    if not isinstance(platforms, list) or not all(isinstance(p, str) for p in platforms):
        unverified.append("the model info names no target platform ('target_platform')")
        platforms = []
    found = _COMPILER.search(head, HEADER_BYTES)
    compiler = found.group(1).decode("ascii", "replace").strip() if found else None
    extras: dict[str, Any] = {"model_data_bytes": data_len}
    trailing = size - (info_at + 8 + info_len)
    if trailing:
        extras["trailing_bytes"] = trailing
    for key in ("name", "ori_network_platform"):
        if isinstance(document.get(key), str):
            extras[key] = document[key]
    return ArtifactInfo(
        path=where,
        vendor="rockchip",
        format="rknn-mini" if version >= MINI_FORMAT else "rknn",
        format_version=int(version),
        toolkit_version=toolkit,
        target_platforms=tuple(p.lower() for p in platforms),
        compiler_version=compiler,
        extras=extras,
        unverified=tuple(unverified),
    )


def _model_info(where: str, at: int, block: bytes) -> dict[str, Any]:
    try:
        document = json.loads(block.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(
            f"{where}: the model-info block at offset {at} is not the JSON object rknn-toolkit2 "
            f"writes ({exc})"
        ) from None
    if not isinstance(document, dict):
        raise ArtifactError(
            f"{where}: the model-info block at offset {at} is a JSON "
            f"{type(document).__name__}, expected an object"
        )
    return document
