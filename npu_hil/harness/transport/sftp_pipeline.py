"""A small file over SFTP in three round trips, read back from the board all the same.

paramiko's ``put`` and ``get`` wait for each answer before the next request: open, write, close,
then the read-back (open, stat, read, close), and a stat, about nine round trips for a file of
a few kilobytes. A job moves several such files each way, so over SSH those round trips, not the
bytes, were most of what a job cost beyond a local run. Here the requests that do not depend on
one another go out together and their answers are read after: open (its handle is needed), then
writes, the ``fstat``, the read-back of every byte and the close in one go (a put), or the reads
twice over, the ``fstat`` and the close (a get). What is checked does not change: the size the
board reports and the sha256 of bytes the board read back, against what was sent or received.

An SFTP server processes the requests of one handle in the order sent (OpenSSH's does one at a
time), so a read after a write sees the write. A short read (allowed by the protocol, never seen
from OpenSSH below its 256 KB limit) falls back to paramiko's own calls.

Uses paramiko's request primitives (``_async_request``, ``_read_response``), the ones its own
``SFTPFile`` prefetch is built on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import paramiko
from paramiko.message import Message
from paramiko.sftp import (
    CMD_ATTRS,
    CMD_CLOSE,
    CMD_DATA,
    CMD_FSTAT,
    CMD_HANDLE,
    CMD_OPEN,
    CMD_READ,
    CMD_STATUS,
    CMD_WRITE,
    SFTP_EOF,
    SFTP_FLAG_CREATE,
    SFTP_FLAG_READ,
    SFTP_FLAG_TRUNC,
    SFTP_FLAG_WRITE,
    SFTP_OK,
    int64,
)

from npu_hil.harness.errors import TransportError

__all__ = ["ShortRead", "get_pipelined", "put_pipelined"]

# paramiko's own request size (SFTPFile.MAX_REQUEST_SIZE): every SFTP server accepts it.
REQUEST = 32768

Digest = tuple[int, str]
# The client as these helpers use it: its request primitives are private, so not in its stubs.
Raw = Any
_ATTRIBUTES: Any = paramiko.SFTPAttributes


class ShortRead(Exception):
    """The server answered a read with fewer bytes than asked before the end of the file."""


class _Answers:
    """Collects the answers to requests sent together, by request number (paramiko hands an
    answer to the object the request was sent for)."""

    def __init__(self) -> None:
        self.by_number: dict[int, tuple[int, Message]] = {}

    def _async_response(self, t: int, msg: Message, num: int) -> None:
        self.by_number[num] = (t, msg)


def _together(
    sftp: Raw, requests: Sequence[tuple[int, tuple[Any, ...]]]
) -> list[tuple[int, Message]]:
    """Send every request, then read every answer; answers in request order."""
    answers = _Answers()
    numbers = [sftp._async_request(answers, t, *args) for t, args in requests]
    while len(answers.by_number) < len(numbers):
        sftp._read_response()
    return [answers.by_number[n] for n in numbers]


def _status(sftp: Raw, t: int, msg: Message, what: int) -> None:
    """Raise the error an answer carries (as paramiko would); an answer of another type than
    ``what`` is the server's error status or a protocol error."""
    if t == what:
        return
    if t != CMD_STATUS:
        raise paramiko.SSHException(f"SFTP: expected answer {what}, got {t}")
    sftp._convert_status(msg)
    raise paramiko.SSHException(f"SFTP: expected answer {what}, got an OK status")


def _open(sftp: Raw, path: str, flags: int) -> bytes:
    t, msg = sftp._request(CMD_OPEN, path, flags, paramiko.SFTPAttributes())
    if t != CMD_HANDLE:
        raise paramiko.SSHException(f"SFTP: open {path}: expected a handle, got {t}")
    return bytes(msg.get_binary())


def _reads(handle: bytes, size: int) -> list[tuple[int, tuple[Any, ...]]]:
    # At least one read, so an empty file is read back (its answer: end of file) too.
    return [(CMD_READ, (handle, int64(o), REQUEST)) for o in range(0, max(size, 1), REQUEST)]


def _read_data(sftp: Raw, answers: Sequence[tuple[int, Message]], size: int) -> bytes:
    """The bytes the read answers carried, in order; ShortRead when one came back short of
    its request before ``size`` (the caller then uses paramiko's sequential reads)."""
    chunks: list[bytes] = []
    got = 0
    for t, msg in answers:
        if t == CMD_STATUS:
            code = msg.get_int()
            if code == SFTP_EOF:
                break  # past the end: what came before is the file
            msg.rewind()
            msg.get_int()  # the request number, read again after the rewind
            sftp._convert_status(msg)
            continue
        _status(sftp, t, msg, CMD_DATA)
        chunk = bytes(msg.get_string())
        chunks.append(chunk)
        got += len(chunk)
        if len(chunk) < REQUEST and got < size:
            raise ShortRead
    return b"".join(chunks)


def put_pipelined(sftp: paramiko.SFTPClient, data: bytes, tmp: str) -> Digest:
    """Write ``data`` to ``tmp`` and read it back: (the size the board reports for it, the
    sha256 of the bytes read back)."""
    handle = _open(sftp, tmp, SFTP_FLAG_READ | SFTP_FLAG_WRITE | SFTP_FLAG_CREATE | SFTP_FLAG_TRUNC)
    writes = [
        (CMD_WRITE, (handle, int64(o), data[o : o + REQUEST])) for o in range(0, len(data), REQUEST)
    ]
    reads = _reads(handle, len(data))
    answers = _together(sftp, [*writes, (CMD_FSTAT, (handle,)), *reads, (CMD_CLOSE, (handle,))])
    for t, msg in answers[: len(writes)]:
        _status(sftp, t, msg, CMD_STATUS)
        _ok(sftp, msg)
    t, msg = answers[len(writes)]
    _status(sftp, t, msg, CMD_ATTRS)
    landed = int(_ATTRIBUTES._from_msg(msg).st_size or 0)
    back = _read_data(sftp, answers[len(writes) + 1 : -1], len(data))
    t, msg = answers[-1]
    _status(sftp, t, msg, CMD_STATUS)
    _ok(sftp, msg)
    return landed, hashlib.sha256(back).hexdigest()


def get_pipelined(sftp: paramiko.SFTPClient, full: str, size: int) -> tuple[bytes, Digest]:
    """``full`` (``size`` bytes when it was checked) read twice over one handle: (the first
    read's bytes, and the size the board reports with the sha256 of the second read)."""
    handle = _open(sftp, full, SFTP_FLAG_READ)
    first, second = _reads(handle, size), _reads(handle, size)
    answers = _together(sftp, [*first, (CMD_FSTAT, (handle,)), *second, (CMD_CLOSE, (handle,))])
    data = _read_data(sftp, answers[: len(first)], size)
    t, msg = answers[len(first)]
    _status(sftp, t, msg, CMD_ATTRS)
    board_size = int(_ATTRIBUTES._from_msg(msg).st_size or 0)
    again = _read_data(sftp, answers[len(first) + 1 : -1], size)
    t, msg = answers[-1]
    _status(sftp, t, msg, CMD_STATUS)
    _ok(sftp, msg)
    return data, (board_size, hashlib.sha256(again).hexdigest())


def _ok(sftp: Raw, msg: Message) -> None:
    """A status answer that must be OK (a write's, the close's). A failure the server names by
    no errno (SFTP's "Failure": a full disk, a short write) is the board's answer, not a lost
    link: a TransportError, so the caller asks the board what went wrong instead of
    reconnecting."""
    msg.rewind()
    msg.get_int()  # the request number
    code = msg.get_int()
    if code == SFTP_OK:
        return
    msg.rewind()
    msg.get_int()
    try:
        sftp._convert_status(msg)
    except OSError as exc:
        if exc.errno is not None:
            raise
        raise TransportError(f"SFTP: {exc}") from None
