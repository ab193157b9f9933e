"""The tensor table of a compiled ``.rknn`` file: each model input's and output's native shape and
byte size as the compiler stored them.

Read from the file rather than from the compiler's build log because the build log of a float16
model prints C1 four times too big (measured with rknn-toolkit2 2.5.0: a 16-channel fp16 output
is logged ``(1,8,3,17,8)`` and stored ``[1, 2, 3, 17, 8]``, 1,664 bytes).

The file is a FlatBuffers buffer after a small header, in two variants: the full one (RK356x,
RK3588, RK3562, RK3576, RV1126B) and the "mini" one (RV1103/06, RV1103B/06B, RK2118). No schema
is published, so the table is found by the signature its entries have in both variants (facts
measured from files the 2.5.0 compiler wrote): a FlatBuffers table whose field 0 is the data type
code (a byte), field 2 the role (1 input, 2 output), fields 3 and 4 the native and original shapes
(int32 vectors) and field 5 the tensor's name (a string); the byte size is field 12 in the full
variant and field 8 in the mini one. An entry is taken only when its original shape is the graph
tensor's own shape, so a wrong guess cannot pass as a reading.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import prod
from pathlib import Path

from npu_hil.harness.errors import NpuHilError

MAGIC = b"RKNN"
_FULL_HEADER = 0x40
"""The full variant's FlatBuffers buffer starts after a 64-byte header."""
_MINI_VERSION = 0x1000
"""Header versions from here on are the mini variant (2.5.0 writes 6 and 0x1004)."""

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
_ITEMSIZE = {
    "float32": 4,
    "uint8": 1,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "float16": 2,
}


class RknnFileError(NpuHilError):
    """A file that is not a compiled RKNN model, or whose tensor table cannot be read."""


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
    def __init__(self, data: bytes, source: str) -> None:
        self.data = data
        self.source = source

    def u8(self, at: int) -> int:
        return self.data[at]

    def i32(self, at: int) -> int:
        value: int = struct.unpack_from("<i", self.data, at)[0]
        return value

    def u32(self, at: int) -> int:
        value: int = struct.unpack_from("<I", self.data, at)[0]
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

    def target(self, at: int) -> int | None:
        if not self.fits(at, 4):
            return None
        to = at + self.u32(at)
        return to if self.fits(to, 4) else None

    def ints(self, at: int, longest: int = 8) -> tuple[int, ...] | None:
        vector = self.target(at)
        if vector is None:
            return None
        count = self.u32(vector)
        if count > longest or not self.fits(vector + 4, 4 * count):
            return None
        return tuple(struct.unpack_from(f"<{count}i", self.data, vector + 4))

    def text(self, at: int, longest: int = 4096) -> str | None:
        string = self.target(at)
        if string is None:
            return None
        count = self.u32(string)
        if count > longest or not self.fits(string + 4, count):
            return None
        try:
            return self.data[string + 4 : string + 4 + count].decode("utf-8")
        except UnicodeDecodeError:
            return None


def read_tensor_table(
    path: str | os.PathLike[str], graph: Mapping[str, Sequence[int]] | None = None
) -> TensorTable:
    """The native inputs and outputs of the ``.rknn`` file at ``path``.

    ``graph`` maps each graph input and output name to its shape (NCHW); entries whose original
    shape differs are not the model's inputs and outputs and are left out. Without it, every
    entry with an input or output role is taken. RknnFileError when the file is no RKNN model or
    a graph tensor has no entry.
    """
    file = Path(path)
    source = str(file)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise RknnFileError(f"{source}: cannot read the compiled model: {exc}") from exc
    if len(data) < _FULL_HEADER + 8 or data[:4] != MAGIC:
        raise RknnFileError(
            f"{source}: not a compiled RKNN model (expected the magic {MAGIC!r} and a header, "
            f"got {data[:4]!r}, {len(data)} bytes)"
        )
    version = struct.unpack_from("<I", data, 8)[0]
    variant = "mini" if version >= _MINI_VERSION else "full"
    size_field = 8 if variant == "mini" else 12
    buffer = _Buffer(data, source)
    found: dict[tuple[str, str], NativeTensor] = {}
    for at in range(0, len(data) - 8, 4):
        tensor = _entry(buffer, at, size_field, graph)
        if tensor is None:
            continue
        key = (tensor.role, tensor.name)
        if key in found and found[key] != tensor:
            raise RknnFileError(
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
            raise RknnFileError(
                f"{source}: no tensor-table entry for {', '.join(missing)} (a {variant} RKNN "
                f"file, header version {version:#x}; entries found: "
                f"{', '.join(sorted(names)) or 'none'})"
            )
    if not inputs or not outputs:
        raise RknnFileError(
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
    role = ROLE_CODES.get(buffer.u8(at + fields[2]))
    dtype = DTYPE_CODES.get(buffer.u8(at + fields[0]))
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
    if min(native) < 1 or min(shape) < 1 or size < prod(shape) * _ITEMSIZE[dtype]:
        return None
    return NativeTensor(name, role, dtype, shape, native, size)
