"""Large files as one byte stream on an SSH exec channel, hashed on both ends in the same pass.

Why not SFTP for large files: paramiko's SFTP client reads its channel a few bytes and one 32 KB
reply at a time, and every read of paramiko's channel buffer shifts all the bytes still queued in
it (``del buffer[:n]``), so with a large window a download goes quadratic (64 MB in 4.6 s with a
64 MB window, 0.7 s with 2 MB, on 127.0.0.1); and SFTP needs a second pass on the board to hash
an upload. On an exec channel the host takes whatever the buffer holds in one read, and the
board hashes while it reads or writes the file.

The board's shell is POSIX sh (busybox ash, dash): no process substitution, no ``pipefail``.
Upload: ``tee`` writes the file and passes the same bytes to the hasher (one pass); ``tee``'s
exit status goes out on fd 3 beside the digest, since a pipeline's status is its last command's.
Download: the hasher reads the file in the background while ``cat`` sends it; a single pass
would need a fifo on the board (a file to create and clean up, and not every filesystem has
them), and the second read comes from the page cache the first one filled.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Callable
from typing import BinaryIO

import paramiko

from npu_hil.harness.errors import TransportError

__all__ = [
    "BOARD_SHA256",
    "StreamLinkLost",
    "check_tee",
    "download_command",
    "finish",
    "parse_digest",
    "receive",
    "send",
    "send_all",
    "upload_command",
]

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


def upload_command(tmp: str, verify: bool) -> str:
    """Write stdin to ``tmp``; with ``verify``, print ``tee <status>`` and the sha256 of what
    was written on stdout."""
    q = shlex.quote(tmp)
    if not verify:
        return f"exec cat > {q}"
    return BOARD_SHA256 + f'{{ {{ tee -- {q}; echo "tee $?" >&3; }} | sha256; }} 3>&1'


def download_command(full: str, verify: bool) -> str:
    """Send ``full`` on stdout; with ``verify``, its sha256 on stderr (stdout carries the file's
    bytes alone)."""
    q = shlex.quote(full)
    if not verify:
        return f"exec cat -- {q}"
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


def finish(channel: paramiko.Channel, timeout: float) -> tuple[int, bytes, bytes]:
    """The command's exit status and the rest of its stdout and its stderr, once it ended.

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
    return channel.recv_exit_status(), out, err


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
