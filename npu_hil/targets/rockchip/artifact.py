"""A compiled ``.rknn`` file: what it says about itself (:func:`read_rockchip_model`) and its
tensor table (:func:`read_tensor_table`), as measured from files rknn-toolkit2 2.5.0 wrote (no
vendor document describes the format): docs/model-developer/models-build.md, "The .rknn file"."""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import prod
from pathlib import Path

import numpy as np

from npu_hil.harness.errors import ArtifactError
from npu_hil.targets.artifact import MAX_HEADER_BYTES, MAX_INFO_BYTES, ArtifactInfo, open_bounded

__all__ = ["NativeTensor", "TensorTable", "read_rockchip_model", "read_tensor_table"]

MAGIC = b"RKNN"
HEADER_BYTES = 64
"""The header before the model data."""
MINI_FORMAT = 0x1000
"""File-format versions from here on are the mini variant (2.5.0 writes 0x1004)."""

_COMPILER = re.compile(rb"compiler version: ([0-9][^\x00()]*(?:\([^\x00()]*\))?)")


def _check_magic(where: str, head: bytes, size: int) -> None:
    if len(head) < HEADER_BYTES or head[:4] != MAGIC:
        raise ArtifactError(
            f"{where}: not a compiled RKNN model (expected the magic {MAGIC!r} and a "
            f"{HEADER_BYTES}-byte header, got {head[:4]!r} and {size} bytes)"
        )


def read_rockchip_model(path: Path) -> ArtifactInfo:
    """The ``.rknn`` file's own statement of its version and target; ArtifactError for a file
    that is not one, naming the offset where it stops being one."""
    where = str(path)
    handle, size = open_bounded(path, "a compiled RKNN model (.rknn)")
    with handle:
        head = handle.read(min(size, MAX_HEADER_BYTES))
        _check_magic(where, head, size)
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
    extras: dict[str, int | str] = {"model_data_bytes": data_len}
    trailing = size - (info_at + 8 + info_len)
    if trailing:
        extras["trailing_bytes"] = trailing
    for key in ("name", "ori_network_platform"):
        value = document.get(key)
        if isinstance(value, str):
            extras[key] = value
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


def _model_info(where: str, at: int, block: bytes) -> Mapping[str, object]:
    # The toolkit's own JSON, open-ended: the reader checks each field it takes.
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


DTYPE_CODES: dict[int, str] = {
    1: "float32",
    2: "uint8",
    3: "int8",
    5: "int16",
    6: "int32",
    7: "int64",
    10: "float16",
}
"""The tensor table's data type codes: ONNX's TensorProto numbering (int8 3 and float16 10 on
int8 and fp16 builds; int64 7 on an ArgMax or TopK index output, measured with 2.5.0)."""
ROLE_CODES: dict[int, str] = {1: "input", 2: "output"}


@dataclass(frozen=True)
class NativeTensor:
    """One model input or output as the compiler laid it out."""

    name: str
    role: str
    dtype: str
    shape: tuple[int, ...]
    """The graph tensor's own shape (NCHW)."""
    native: tuple[int, ...]
    """The compiler's native shape: ``[N, C1, H, W, C2]``; for an NHWC input ``[N, 1, H, W, C]``
    (the row stride is only in the size)."""
    size: int
    """Bytes the compiler reserves for the tensor."""


@dataclass(frozen=True)
class TensorTable:
    variant: str
    """``full`` or ``mini``."""
    inputs: tuple[NativeTensor, ...]
    outputs: tuple[NativeTensor, ...]


class _Buffer:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def i32(self, at: int) -> int:
        value: int = struct.unpack_from("<i", self.data, at)[0]
        return value

    def fits(self, at: int, size: int) -> bool:
        return at >= 0 and at + size <= len(self.data)

    def fields(self, table: int) -> list[int] | None:
        """The table's field offsets (0 = absent), or None when ``table`` is no table."""
        vtable = table - self.i32(table)
        if not self.fits(vtable, 4):
            return None
        vsize, tsize = struct.unpack_from("<HH", self.data, vtable)
        if vsize < 4 or vsize % 2 or vsize > 128 or tsize < 4 or not self.fits(table, tsize):
            return None
        if not self.fits(vtable, vsize):
            return None
        count = (vsize - 4) // 2
        offsets = list(struct.unpack_from(f"<{count}H", self.data, vtable + 4))
        if any(o >= tsize for o in offsets):
            return None
        return offsets

    def span(self, at: int, item: int, longest: int) -> tuple[int, int] | None:
        """Where the vector (or string) the offset at ``at`` points to starts, and its length."""
        if not self.fits(at, 4):
            return None
        vector = at + struct.unpack_from("<I", self.data, at)[0]
        if not self.fits(vector, 4):
            return None
        count: int = struct.unpack_from("<I", self.data, vector)[0]
        if count > longest or not self.fits(vector + 4, item * count):
            return None
        return vector + 4, count

    def ints(self, at: int, longest: int = 8) -> tuple[int, ...] | None:
        span = self.span(at, 4, longest)
        return None if span is None else struct.unpack_from(f"<{span[1]}i", self.data, span[0])

    def text(self, at: int, longest: int = 4096) -> str | None:
        span = self.span(at, 1, longest)
        if span is None:
            return None
        try:
            return self.data[span[0] : span[0] + span[1]].decode("utf-8")
        except UnicodeDecodeError:
            return None


def read_tensor_table(
    path: str | os.PathLike[str], graph: Mapping[str, Sequence[int]] | None = None
) -> TensorTable:
    """The native inputs and outputs of the ``.rknn`` file at ``path``.

    ``graph`` maps each graph input and output name to its shape (NCHW); entries whose original
    shape differs are not the model's inputs and outputs and are left out. Without it, every
    entry with an input or output role is taken. ArtifactError when the file is no RKNN model,
    cannot be read or a graph tensor has no entry.
    """
    file = Path(path)
    source = str(file)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"{source}: cannot read the compiled model: {exc}") from exc
    _check_magic(source, data, len(data))
    (version,) = struct.unpack_from("<Q", data, 8)
    variant = "mini" if version >= MINI_FORMAT else "full"
    size_field = 8 if variant == "mini" else 12
    buffer = _Buffer(data)
    found: dict[tuple[str, str], NativeTensor] = {}
    for at in range(0, len(data) - 8, 4):
        tensor = _entry(buffer, at, size_field, graph)
        if tensor is None:
            continue
        key = (tensor.role, tensor.name)
        if key in found and found[key] != tensor:
            raise ArtifactError(
                f"{source}: two different table entries for {tensor.role} {tensor.name!r}: "
                f"{found[key]} and {tensor}"
            )
        found[key] = tensor
    inputs = tuple(t for (role, _), t in found.items() if role == "input")
    outputs = tuple(t for (role, _), t in found.items() if role == "output")
    if graph is not None:
        names = {t.name for t in (*inputs, *outputs)}
        missing = sorted(set(graph) - names)
        if missing:
            raise ArtifactError(
                f"{source}: no tensor-table entry for {', '.join(missing)} (a {variant} RKNN "
                f"file, header version {version:#x}; entries found: "
                f"{', '.join(sorted(names)) or 'none'})"
            )
    if not inputs or not outputs:
        raise ArtifactError(
            f"{source}: found {len(inputs)} inputs and {len(outputs)} outputs in the tensor table "
            f"(a {variant} RKNN file, header version {version:#x})"
        )
    return TensorTable(variant, inputs, outputs)


def _entry(
    buffer: _Buffer, at: int, size_field: int, graph: Mapping[str, Sequence[int]] | None
) -> NativeTensor | None:
    fields = buffer.fields(at)
    if fields is None or len(fields) <= max(5, size_field):
        return None
    if not all(fields[i] for i in (0, 2, 3, 4, 5, size_field)):
        return None
    role = ROLE_CODES.get(buffer.data[at + fields[2]])
    dtype = DTYPE_CODES.get(buffer.data[at + fields[0]])
    if role is None or dtype is None:
        return None
    native = buffer.ints(at + fields[3])
    shape = buffer.ints(at + fields[4])
    name = buffer.text(at + fields[5])
    if not native or not shape or not name:
        return None
    if graph is not None and tuple(graph.get(name, ())) != shape:
        return None
    if not buffer.fits(at + fields[size_field], 4):
        return None
    size = buffer.i32(at + fields[size_field])
    if min(native) < 1 or min(shape) < 1 or size < prod(shape) * np.dtype(dtype).itemsize:
        return None
    return NativeTensor(name, role, dtype, shape, native, size)
