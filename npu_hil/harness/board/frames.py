"""The byte framing of every agent stream: an 8-byte big-endian header, then its payload, a message
or a bulk frame (``docs/runtime/agent.md``, Frames and requests). ``struct`` only and nothing else:
the relay imports it, and every request over a serial console pays the relay's start-up.
"""

from __future__ import annotations

import struct

# The caps make a desynchronised stream (anything that is not a frame header) fail at once
# instead of waiting for exabytes. Text read as a header never has the top bit set (ASCII is
# below 0x80), so it meets the message cap.
FRAME_HEADER = struct.Struct(">Q")
MAX_FRAME_BYTES = 64 << 20
BULK_FLAG = 1 << 63
# A job's inputs are at most 2 GiB (job.MAX_JOB_INPUT_BYTES); its outputs come back the same way.
MAX_BULK_FRAME_BYTES = 8 << 30
BULK_PREFIX = struct.Struct(">I")
DIGEST_BYTES = 32  # a sha256 per buffer, in the trailer
# Buffers are written and hashed in pieces of this size, so the reader hashes the first piece
# while the writer hashes the next.
BULK_CHUNK = 256 << 10


def frame_length(header: bytes) -> int:
    """The payload length announced by a frame header, of either kind; ValueError when it cannot
    be one."""
    (raw,) = FRAME_HEADER.unpack(header)
    length = raw & ~BULK_FLAG
    cap = MAX_BULK_FRAME_BYTES if raw & BULK_FLAG else MAX_FRAME_BYTES
    if length > cap:
        raise ValueError(
            f"frame header announces {length} bytes (cap {cap}): the stream is not npu-hil frames"
        )
    return int(length)


def is_bulk(header: bytes) -> bool:
    """Whether a frame header announces a bulk frame (a message with buffers after it)."""
    return bool(FRAME_HEADER.unpack(header)[0] & BULK_FLAG)


def bulk_header(message_bytes: int, buffer_bytes: int) -> bytes:
    """The header and prefix of a bulk frame whose JSON takes ``message_bytes`` and whose
    buffers ``buffer_bytes`` in all."""
    length = BULK_PREFIX.size + message_bytes + buffer_bytes
    if length > MAX_BULK_FRAME_BYTES or message_bytes > MAX_FRAME_BYTES:
        raise ValueError(f"a bulk frame of {length} bytes exceeds the cap {MAX_BULK_FRAME_BYTES}")
    return FRAME_HEADER.pack(length | BULK_FLAG) + BULK_PREFIX.pack(message_bytes)


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
