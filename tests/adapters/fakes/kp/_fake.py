"""State and controls of the fake KL730, and the receive-buffer format ``fake_kplus.c`` reads.

Receive buffer (little endian): u32 magic ``FKP1``, u32 node count, then per node: u32 index,
u32 data_layout, u32 shape_len, i32 shape[], u32 stride_npu[], u32 stride_onnx[],
u32 quantized_axis, u32 n, n x (i32 radix, u32 scale_dtype, f32 scale), u32 name_len,
name bytes, u32 data_len, data bytes, zero padding to 4 bytes.
"""

from __future__ import annotations

import struct
from typing import Any

MAGIC = 0x3150_4B46  # "FKP1"
FAULTS: set[str] = set()
CALLS: list[tuple[str, dict[str, Any]]] = []
STATE: dict[str, Any] = {"connected": 0, "model": None, "queue": [], "firmware": None}


def reset() -> None:
    FAULTS.clear()
    CALLS.clear()
    STATE.update({"connected": 0, "model": None, "queue": [], "firmware": None})


def pack_node(
    index: int,
    data_layout: int,
    shape: list[int],
    stride_npu: list[int],
    stride_onnx: list[int],
    quantized_axis: int,
    quant: list[tuple[int, int, float]],
    name: str,
    data: bytes,
) -> bytes:
    n = len(shape)
    out = struct.pack("<III", index, data_layout, n)
    out += struct.pack(f"<{n}i", *shape) + struct.pack(f"<{n}I", *stride_npu)
    out += struct.pack(f"<{n}I", *stride_onnx)
    out += struct.pack("<II", quantized_axis, len(quant))
    for radix, dtype, scale in quant:
        out += struct.pack("<iIf", radix, dtype, scale)
    encoded = name.encode()
    out += struct.pack("<I", len(encoded)) + encoded
    out += struct.pack("<I", len(data)) + data
    return out + b"\0" * (-len(out) % 4)


def pack_raw_result(nodes: list[bytes]) -> bytes:
    return struct.pack("<II", MAGIC, len(nodes)) + b"".join(nodes)
