"""One file's bytes over SSH, either way, with what each side saw of them: small files over SFTP
in three round trips and read back, large ones streamed over an exec channel and hashed on both
ends in the same pass. Each part's own reasons are in its section's comments."""

from __future__ import annotations

import contextlib
import hashlib
import re
import shlex
import socket
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

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

from npu_hil.harness.board.wire import sha256_file
from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.oserrors import errno_in_text

# A small file over SFTP in three round trips, read back all the same. paramiko's ``put``/``get``
# wait for each answer (about nine round trips for a few kilobytes); here the requests that do not
# depend on one another go out together (open, then the writes or reads, the ``fstat``, the
# read-back and the close), on paramiko's own request primitives (``_async_request``,
# ``_read_response``, as its ``SFTPFile`` prefetch). An SFTP server processes one handle's requests
# in order (OpenSSH's one at a time), so a read after a write sees it. A short read (allowed, never
# seen from OpenSSH below its 256 KB limit) falls back to paramiko's own calls.

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
    for answer in answers[: len(writes)]:
        _ok(sftp, answer)
    t, msg = answers[len(writes)]
    _status(sftp, t, msg, CMD_ATTRS)
    landed = int(_ATTRIBUTES._from_msg(msg).st_size or 0)
    back = _read_data(sftp, answers[len(writes) + 1 : -1], len(data))
    _ok(sftp, answers[-1])
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
    _ok(sftp, answers[-1])
    return data, (board_size, hashlib.sha256(again).hexdigest())


def _ok(sftp: Raw, answer: tuple[int, Message]) -> None:
    """A status answer that must be OK (a write's, the close's). A failure the server names by
    no errno (SFTP's "Failure": a full disk, a short write) is the board's answer, not a lost
    link: a TransportError, so the caller asks the board what went wrong instead of
    reconnecting."""
    t, msg = answer
    _status(sftp, t, msg, CMD_STATUS)
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


# Large files as one byte stream on an exec channel, hashed on both ends in the same pass
# (paramiko's SFTP client goes quadratic on a large window: docs/runtime/agent.md, "SSH"). The
# board's shell is POSIX sh (busybox ash, dash): no process substitution, no ``pipefail``, so
# ``tee``'s exit status goes out on fd 3 beside the digest; a download hashes in a second read
# from the page cache rather than through a fifo (not every filesystem has them).

CHUNK = 1 << 20
# sha256sum prints "<hex>  -", openssl "<hex> *stdin".
_DIGEST = re.compile(rb"^([0-9a-f]{64}) [ *]?(?:-|stdin)$", re.MULTILINE)
_TEE = re.compile(rb"^tee (\d+)$", re.MULTILINE)
# A shell function ``sha256``, the board's fastest sha256 of stdin: openssl uses the CPU's SHA
# instructions (ARMv8 crypto extensions, x86 SHA-NI) where busybox's and coreutils' sha256sum are
# plain C, several times slower; sha256sum where there is no openssl.
BOARD_SHA256 = (
    "sha256() { if command -v openssl >/dev/null 2>&1; then openssl dgst -sha256 -r; "
    "else sha256sum; fi; }; "
)


class StreamLinkLost(ConnectionError):
    """The connection went away mid-stream (a ConnectionError, so the caller reconnects)."""


def upload_command(tmp: str) -> str:
    """Write stdin to ``tmp``; print ``tee <status>`` and the sha256 of what was written."""
    q = shlex.quote(tmp)
    return BOARD_SHA256 + f'{{ {{ tee -- {q}; echo "tee $?" >&3; }} | sha256; }} 3>&1'


def download_command(full: str) -> str:
    """Send ``full`` on stdout, its sha256 on stderr (stdout carries the file's bytes alone)."""
    q = shlex.quote(full)
    return BOARD_SHA256 + f"sha256 < {q} >&2 & cat -- {q} && wait $!"


def send(channel: paramiko.Channel, source: BinaryIO) -> tuple[int, str]:
    """Send ``source`` to the command's stdin and close it; its size and sha256."""
    digest = hashlib.sha256()
    size = 0
    while chunk := source.read(CHUNK):
        digest.update(chunk)
        send_all(channel, chunk)
        size += len(chunk)
    channel.shutdown_write()
    return size, digest.hexdigest()


def send_all(channel: paramiko.Channel, data: bytes) -> None:
    """``channel.sendall`` in linear time: paramiko's keeps ``data = data[sent:]``, a copy of
    everything left after every packet, quadratic in the size of ``data``."""
    view = memoryview(data)
    # What paramiko puts in one packet at most; a larger slice would be copied for nothing.
    step = max(1, int(channel.out_max_packet_size) - 64)
    pos = 0
    while pos < len(view):
        sent = channel.send(view[pos : pos + step].tobytes())
        if not sent:  # paramiko's answer for a channel closed under us
            raise StreamLinkLost(f"the channel closed while sending{_cause(channel)}")
        pos += sent


def receive(channel: paramiko.Channel, sink: BinaryIO, most: int) -> tuple[int, str]:
    """Copy the command's stdout to ``sink`` until it ends; its size and sha256.

    ``most`` should be at least the channel's window: a read that takes the whole buffer leaves
    paramiko nothing to shift."""
    digest = hashlib.sha256()
    size = 0
    while chunk := channel.recv(most):
        digest.update(chunk)
        sink.write(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def finish(channel: paramiko.Channel, timeout: float, what: str) -> tuple[bytes, bytes]:
    """The rest of the command's stdout and its stderr, once it ended; TransportError when it
    exited other than 0.

    StreamLinkLost when the connection closed before an exit status came: paramiko closes a
    channel's buffers when its transport dies, which reads like an ordinary end of stream. The
    board sends EOF before the exit status, so a channel closed without either lost its link
    (paramiko closes the channels before it marks the transport inactive)."""
    out = _drain(channel.recv)
    err = _drain(channel.recv_stderr)
    if not channel.status_event.wait(timeout):
        raise StreamLinkLost(f"no exit status within {timeout:.1f} s")
    transport = channel.get_transport()
    active = transport is not None and transport.is_active()
    if channel.exit_status == -1 and not (channel.eof_received and active):
        raise StreamLinkLost(
            f"the connection closed before the command's exit status{_cause(channel)}"
        )
    status = channel.recv_exit_status()
    if status != 0:
        raise TransportError(f"{what}: the board's side exited {status}: {err[-500:]!r}")
    return out, err


def _cause(channel: paramiko.Channel) -> str:
    """Why paramiko dropped the connection (e.g. ``Mismatched MAC``), for the message."""
    transport = channel.get_transport()
    cause = None if transport is None else transport.get_exception()
    return "" if cause is None else f" ({str(cause) or type(cause).__name__})"


def _drain(read: Callable[[int], bytes]) -> bytes:
    data = bytearray()
    while chunk := read(1 << 16):
        data += chunk
    return bytes(data)


def parse_digest(text: bytes, what: str) -> str:
    """The sha256 the board's hasher printed; TransportError with the board's words if there is
    none (the board's answer: not retried)."""
    found = _DIGEST.search(text)
    if found is None:
        raise TransportError(f"{what}: no sha256 from the board: {_tail(text)!r}")
    return found.group(1).decode()


def check_tee(out: bytes, what: str, err: bytes) -> None:
    """TransportError unless the upload's ``tee`` reported exit status 0."""
    found = _TEE.search(out)
    if found is None or found.group(1) != b"0":
        raise TransportError(f"{what}: writing the file on the board failed: {_tail(err)!r}")


def _tail(text: bytes) -> bytes:
    return text.strip()[-500:]


# One file's bytes either way, as ``(size, sha256)`` pairs of what each side saw: the caller
# (SshTransport) compares them, renames into place and retries.

OpenStream = Callable[[str], paramiko.Channel]

# Errors that mean "the link is gone", as opposed to a remote refusal (an SFTP status).
LINK_ERRORS = (paramiko.SSHException, EOFError, ConnectionError, socket.timeout, OSError)


def link_lost(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection is gone, rather than the board's answer: an SFTP
    status (no such file, permission denied) arrives as an OSError with an errno."""
    if not isinstance(exc, LINK_ERRORS):
        return False
    return not (
        isinstance(exc, OSError)
        and exc.errno is not None
        and not isinstance(exc, ConnectionError | socket.timeout)
    )


def readback(sftp: paramiko.SFTPClient, full: str) -> Digest:
    """Size and sha256 of a small remote file read back over SFTP: a round trip costs well
    under a millisecond where ``sha256sum`` would cost a fork of sshd and a shell."""
    digest = hashlib.sha256()
    size = 0
    with sftp.open(full, "rb") as stream:
        # All the reads in flight at once: one after the other, each waits a round trip.
        stream.prefetch(stream.stat().st_size)
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def put_sftp(sftp: paramiko.SFTPClient, local: Path, tmp: str) -> tuple[Digest, Digest]:
    """A small file over SFTP, read back: (size, sha256) sent, and as the board has it."""
    data = local.read_bytes()
    sent = (len(data), hashlib.sha256(data).hexdigest())
    with contextlib.suppress(ShortRead):
        return sent, put_pipelined(sftp, data, tmp)
    # confirm=False: the size is checked by the caller together with the checksum.
    sftp.put(str(local), tmp, confirm=False)
    return sent, (int(sftp.stat(tmp).st_size or 0), readback(sftp, tmp)[1])


def put_stream(
    open_stream: OpenStream, local: Path, tmp: str, what: str, *, io_timeout: float
) -> tuple[Digest, str]:
    """A large file on an exec channel: (size, sha256) sent, and the board's sha256 of the
    bytes it wrote."""
    channel = open_stream(upload_command(tmp))
    try:
        with local.open("rb") as source:
            sent = send(channel, source)
        out, err = finish(channel, io_timeout, what)
    finally:
        channel.close()
    check_tee(out, what, err)
    return sent, parse_digest(out, what)


def get_sftp(sftp: paramiko.SFTPClient, full: str, tmp: Path, size: int) -> tuple[Digest, Digest]:
    """A small file of ``size`` bytes over SFTP: (size, sha256) received, and as read back
    from the board."""
    try:
        data, board = get_pipelined(sftp, full, size)
    except ShortRead:
        sftp.get(full, str(tmp), prefetch=True)
        board = readback(sftp, full)
    else:
        # The file as it landed here, hashed from the disk, against the board's read-back.
        tmp.write_bytes(data)
    return (tmp.stat().st_size, sha256_file(str(tmp))), board


def get_stream(
    open_stream: OpenStream,
    full: str,
    tmp: Path,
    size: int,
    what: str,
    *,
    io_timeout: float,
    window: int,
) -> tuple[Digest, Digest]:
    """A large file on an exec channel: (size, sha256) received, and the size the board
    reported with the sha256 it computed while sending."""
    channel = open_stream(download_command(full))
    try:
        with tmp.open("wb") as sink:
            got = receive(channel, sink, max(window, CHUNK))
        _, err = finish(channel, io_timeout, what)
    finally:
        channel.close()
    return got, (size, parse_digest(err, what))


def write_problem(
    client: paramiko.SSHClient | None, folder: str, size: int, timeout: float
) -> int | None:
    """Why ``size`` bytes cannot be written in ``folder`` on the board: the errno its shell's
    error names (ENOSPC, EROFS, EACCES...), or None when the write works or the board cannot be
    asked over the current connection (SFTP has no word for a full or read-only disk)."""
    probe = f"{folder}/.npu-hil-probe.{uuid.uuid4().hex[:12]}"
    command = (
        f"mkdir -p -- {shlex.quote(folder)} && head -c {int(size)} /dev/zero "
        f">{shlex.quote(probe)}; status=$?; rm -f -- {shlex.quote(probe)}; exit $status"
    )
    transport = None if client is None else client.get_transport()
    if client is None or transport is None or not transport.is_active():
        return None  # no link: not the board's answer, and not worth a reconnect
    try:
        _, stdout, stderr = client.exec_command(command, timeout=timeout)
        status = stdout.channel.recv_exit_status()
        text = stderr.read()
    except LINK_ERRORS:
        return None
    return None if status == 0 else errno_in_text(text)
