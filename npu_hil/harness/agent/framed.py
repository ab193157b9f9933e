"""The host's half of a job: one bulk frame to the agent, its answer read back with the device
buffers it carries, each buffer hashed while it arrives (:mod:`npu_hil.harness.board.frames`: the
sender's digests travel in the frame's trailer)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from npu_hil.harness.board.wire import (
    BULK_CHUNK,
    BULK_PREFIX,
    DIGEST_BYTES,
    bulk_sizes,
    decode_frame,
    encode_bulk_frame,
)

__all__ = [
    "FRAMED_JOBS",
    "BulkAnswer",
    "Receiver",
    "Replay",
    "StreamEnded",
    "bulk_request",
    "read_bulk",
    "recv_exactly",
]

# The hello's feature that says the agent reads framed jobs.
FRAMED_JOBS = "framed-jobs"


class StreamEnded(Exception):
    """The agent's stdout closed: the agent process is gone."""


class Receiver(Protocol):
    """What frames are read from: a resident agent's stream, or a one-shot agent's whole stdout."""

    def recv(self, n: int, timeout: float) -> bytes: ...


class Replay:
    """A finished one-shot agent's stdout read as a resident agent's stream is: the same frames,
    read by the same code; ``b""`` at its end, as the stream of an agent that exited."""

    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)
        self._at = 0

    def recv(self, n: int, timeout: float) -> bytes:
        chunk = self._data[self._at : self._at + n]
        self._at += len(chunk)
        return bytes(chunk)


def recv_exactly(stream: Receiver, n: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    remaining = n
    while remaining:
        chunk = stream.recv(remaining, max(0.0, deadline - time.monotonic()))
        if not chunk:
            raise StreamEnded
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def recv_buffer(stream: Receiver, n: int, deadline: float) -> tuple[bytearray, str]:
    """``n`` bytes straight into one buffer (the result's arrays are views of it), hashed piece
    by piece as they arrive; the buffer and its sha256."""
    data = bytearray(n)
    view = memoryview(data)
    digest = hashlib.sha256()
    filled = 0
    while filled < n:
        chunk = stream.recv(min(n - filled, BULK_CHUNK), max(0.0, deadline - time.monotonic()))
        if not chunk:
            raise StreamEnded
        view[filled : filled + len(chunk)] = chunk
        digest.update(chunk)
        filled += len(chunk)
    return data, digest.hexdigest()


def bulk_request(message: Mapping[str, object], buffers: list[memoryview]) -> Iterator[bytes]:
    """A request frame carrying ``buffers`` after its message, as the pieces to send in turn
    (each input hashed piece by piece as it goes, the trailer last)."""
    for part in encode_bulk_frame(message, buffers):
        yield bytes(part)


@dataclass
class BulkAnswer:
    """A bulk frame as read: its message, its buffers, their sha256 as computed here while they
    arrived, and as the sender's trailer gives them."""

    message: dict[str, object]
    buffers: list[bytearray]
    ours: list[str]
    theirs: list[str]


def read_bulk(stream: Receiver, length: int, deadline: float) -> BulkAnswer:
    """The rest of a bulk frame whose header announced ``length`` bytes."""
    (message_bytes,) = BULK_PREFIX.unpack(recv_exactly(stream, BULK_PREFIX.size, deadline))
    if message_bytes > length - BULK_PREFIX.size:
        raise ValueError(f"a bulk frame's message of {message_bytes} bytes does not fit")
    message = decode_frame(recv_exactly(stream, message_bytes, deadline))
    sizes = bulk_sizes(message, length - BULK_PREFIX.size - message_bytes)
    buffers, ours = [], []
    for size in sizes:
        data, digest = recv_buffer(stream, size, deadline)
        buffers.append(data)
        ours.append(digest)
    trailer = recv_exactly(stream, DIGEST_BYTES * len(sizes), deadline) if sizes else b""
    theirs = [trailer[i : i + DIGEST_BYTES].hex() for i in range(0, len(trailer), DIGEST_BYTES)]
    return BulkAnswer(message, buffers, ours, theirs)
