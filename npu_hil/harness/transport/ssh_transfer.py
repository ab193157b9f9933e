"""One file's bytes over SSH, either way, with what each side saw of them: small files over
SFTP and read back, large ones streamed over an exec channel and hashed on the board as they
pass (:mod:`~npu_hil.harness.transport.ssh_stream`). The caller
(:class:`~npu_hil.harness.transport.ssh. SshTransport`) compares the two sides' (size, sha256),
renames into place and retries.

Each function returns ``(size, sha256)`` pairs, ``""`` for a sha256 not computed when
``verify`` is off.
"""

from __future__ import annotations

import contextlib
import hashlib
import shlex
import socket
import uuid
from collections.abc import Callable
from pathlib import Path

import paramiko

import npu_hil.harness.transport.sftp_pipeline as sftp_pipeline
import npu_hil.harness.transport.ssh_stream as ssh_stream
from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.oserrors import errno_in_text

__all__ = [
    "LINK_ERRORS",
    "get_sftp",
    "get_stream",
    "link_lost",
    "put_sftp",
    "put_stream",
    "readback",
    "sha256_of",
    "write_problem",
]

Digest = tuple[int, str]
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


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


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


def put_sftp(
    sftp: paramiko.SFTPClient, local: Path, tmp: str, *, verify: bool
) -> tuple[Digest, Digest]:
    """A small file over SFTP, read back: (size, sha256) sent, and (size, sha256) as the board
    has it (its size only when ``verify`` is off)."""
    data = local.read_bytes()
    sent = (len(data), hashlib.sha256(data).hexdigest() if verify else "")
    if verify:
        with contextlib.suppress(sftp_pipeline.ShortRead):
            return sent, sftp_pipeline.put_pipelined(sftp, data, tmp)
    # confirm=False: the size is checked by the caller together with the checksum.
    sftp.put(str(local), tmp, confirm=False)
    if not verify:
        return sent, sent
    return sent, (int(sftp.stat(tmp).st_size or 0), readback(sftp, tmp)[1])


def put_stream(
    open_stream: OpenStream, local: Path, tmp: str, what: str, *, verify: bool, io_timeout: float
) -> tuple[Digest, str]:
    """A large file on an exec channel: (size, sha256) sent, and the board's sha256 of the
    bytes it wrote."""
    channel = open_stream(ssh_stream.upload_command(tmp, verify))
    try:
        with local.open("rb") as source:
            sent = ssh_stream.send(channel, source)
        status, out, err = ssh_stream.finish(channel, io_timeout)
    finally:
        channel.close()
    if status != 0:
        raise TransportError(f"{what}: the board's side exited {status}: {err[-500:]!r}")
    if not verify:
        return sent, ""
    ssh_stream.check_tee(out, what, err)
    return sent, ssh_stream.parse_digest(out, what)


def get_sftp(
    sftp: paramiko.SFTPClient, full: str, tmp: Path, size: int, *, verify: bool
) -> tuple[Digest, Digest]:
    """A small file of ``size`` bytes over SFTP: (size, sha256) received, and as read back
    from the board."""
    if verify:
        try:
            data, board = sftp_pipeline.get_pipelined(sftp, full, size)
        except sftp_pipeline.ShortRead:
            pass
        else:
            tmp.write_bytes(data)
            # The file as it landed here, hashed from the disk, against the board's read-back.
            return (tmp.stat().st_size, sha256_of(tmp)), board
    sftp.get(full, str(tmp), prefetch=True)
    if not verify:
        return (0, ""), (0, "")
    return (tmp.stat().st_size, sha256_of(tmp)), readback(sftp, full)


def get_stream(
    open_stream: OpenStream,
    full: str,
    tmp: Path,
    size: int,
    what: str,
    *,
    verify: bool,
    io_timeout: float,
    window: int,
) -> tuple[Digest, Digest]:
    """A large file on an exec channel: (size, sha256) received, and the size the board
    reported with the sha256 it computed while sending."""
    channel = open_stream(ssh_stream.download_command(full, verify))
    try:
        with tmp.open("wb") as sink:
            got = ssh_stream.receive(channel, sink, max(window, ssh_stream.CHUNK))
        status, _, err = ssh_stream.finish(channel, io_timeout)
    finally:
        channel.close()
    if status != 0:
        raise TransportError(f"{what}: the board's side exited {status}: {err[-500:]!r}")
    return got, ((size, ssh_stream.parse_digest(err, what)) if verify else got)


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
