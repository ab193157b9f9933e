"""The byte framing of every agent stream: an 8-byte big-endian length, then that many bytes.

Standard library (``struct``) only and nothing else, because the relay imports it and every
request over a serial console pays the relay's start-up; what the bytes of a frame mean (UTF-8
JSON) is :mod:`wire`'s.
"""

from __future__ import annotations

import struct

# The cap makes a desynchronised stream (anything that is not a frame header) fail at once
# instead of waiting for exabytes.
FRAME_HEADER = struct.Struct(">Q")
MAX_FRAME_BYTES = 64 << 20


def frame_length(header: bytes) -> int:
    """The payload length announced by a frame header; ValueError when it cannot be one."""
    (length,) = FRAME_HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ValueError(
            f"frame header announces {length} bytes (cap {MAX_FRAME_BYTES}): "
            "the stream is not npu-hil frames"
        )
    return int(length)


def whole_frames(data: bytes) -> tuple[int, int]:
    """How many whole frames ``data`` starts with, and how many bytes they take; ValueError on
    a header that cannot be one."""
    count = offset = 0
    while offset + FRAME_HEADER.size <= len(data):
        end = offset + FRAME_HEADER.size + frame_length(data[offset : offset + FRAME_HEADER.size])
        if end > len(data):
            break
        count, offset = count + 1, end
    return count, offset
