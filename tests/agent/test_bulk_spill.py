"""An input past IN_MEMORY_BYTES lands in an unlinked file of the jobs folder; a disk that stops
taking it (full, read-only) or a jobs folder that is not the agent's own costs the job nothing:
the buffer is read into memory instead, byte for byte and with the same sha256."""

from __future__ import annotations

import errno
import hashlib
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.board import serve as board_serve
from npu_hil.harness.board.serve import IN_MEMORY_BYTES, FrameStream
from npu_hil.harness.board.wire import encode_bulk_frame

SIZE = IN_MEMORY_BYTES + 3 * 65536 + 17  # past the memory bound, not a whole number of chunks


def read_one(data: bytes) -> board_serve.Request:
    """The bulk frame of one buffer, sent through a pipe and read by the agent's stream."""
    read_fd, write_fd = os.pipe()

    def send() -> None:
        with os.fdopen(write_fd, "wb") as out:
            for part in encode_bulk_frame({"op": "job"}, [memoryview(data)]):
                out.write(part)

    sender = threading.Thread(target=send)
    sender.start()
    answers = os.open(os.devnull, os.O_WRONLY)
    try:
        request = FrameStream(read_fd, answers).read()
    finally:
        sender.join()
        os.close(read_fd)
        os.close(answers)
    assert request is not None
    return request


@pytest.fixture
def payload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    monkeypatch.chdir(tmp_path)
    return np.random.default_rng(5).integers(0, 256, SIZE, dtype=np.uint8).tobytes()


def test_a_large_input_goes_through_a_file(payload: bytes) -> None:
    request = read_one(payload)
    (buffer,) = request.buffers or []
    assert not isinstance(buffer, bytearray)  # the mapped file, not the heap
    assert bytes(buffer) == payload and request.damaged == ()
    assert os.listdir("jobs") == []  # unlinked at once


@pytest.mark.parametrize("after", [0, IN_MEMORY_BYTES // 2 + 5])
def test_a_disk_that_stops_taking_it_costs_nothing(
    payload: bytes, monkeypatch: pytest.MonkeyPatch, after: int
) -> None:
    """ENOSPC at the first write, or half-way through: the bytes that reached the file are
    read back, the rest comes from the stream, and the trailer still checks out."""
    written = [0]
    real_write = os.write

    def write(fd: int, data: memoryview) -> int:
        if written[0] >= after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        count = real_write(fd, data)
        written[0] += count
        return count

    monkeypatch.setattr(board_serve.os, "write", write)
    request = read_one(payload)
    (buffer,) = request.buffers or []
    assert isinstance(buffer, bytearray)
    assert hashlib.sha256(buffer).digest() == hashlib.sha256(payload).digest()
    assert request.damaged == ()
    assert written[0] >= after


def test_a_jobs_folder_not_its_own_is_never_written(payload: bytes, tmp_path: Path) -> None:
    """A symlink planted as ``jobs/`` after the agent started: the spill goes nowhere near it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, "jobs")
    request = read_one(payload)
    (buffer,) = request.buffers or []
    assert isinstance(buffer, bytearray) and bytes(buffer) == payload
    assert list(elsewhere.iterdir()) == []
