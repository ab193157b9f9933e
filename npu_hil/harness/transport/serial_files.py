"""Files through a serial console's shell: base64 in chunks, each chunk checked by sha256 on
the receiving side and resent when it does not match, and a sha256 over the whole file before
it is renamed into place (put) or handed to the caller (get). Why this and not a binary framing
protocol is said in :mod:`npu_hil.harness.transport.serial_console`.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import re
import shlex
import uuid
from pathlib import PurePosixPath

from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.base import remote_path
from npu_hil.harness.transport.serial_shell import ConsoleShell, raise_os_error

__all__ = ["B64_LINE", "ConsoleFiles", "base64_body"]

# A canonical-mode tty accepts at most 4095 characters per line; stay far below.
B64_LINE = 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")


def base64_body(data: bytes) -> str:
    """``data`` as base64 lines short enough for a canonical-mode tty."""
    text = base64.b64encode(data).decode("ascii")
    return "\n".join(text[i : i + B64_LINE] for i in range(0, len(text), B64_LINE))


def _eof() -> str:
    """A heredoc terminator no base64 line can be."""
    return f"NPU_EOF_{uuid.uuid4().hex[:8]}"


class ConsoleFiles(ConsoleShell):
    """Chunked, checked transfers of whole files between this machine and the board's workdir."""

    _workdir: str
    chunk_size: int
    retries: int

    def _remote(self, path: str | PurePosixPath) -> str:
        return shlex.quote(f"{self._workdir}/{remote_path(path)}")

    def _put_bytes(self, data: bytes, path: str | PurePosixPath) -> None:
        pure = remote_path(path)
        target = self._remote(pure)
        tmp = self._remote(f"{pure.parent}/.{pure.name}.{uuid.uuid4().hex[:8]}.tmp")
        chunk_file = f"{tmp}.c"
        parent = shlex.quote(f"{self._workdir}/{pure.parent}")
        digest = hashlib.sha256(data).hexdigest()
        try:
            if len(data) <= self.chunk_size:
                # The file is its only chunk: created, checked and renamed in one exchange
                # (four before: create, chunk, check and rename, clean-up), and resent whole
                # when the board's sha256 differs. A job's files are mostly this size.
                eof = _eof()
                self._retry(
                    f"mkdir -p {parent} && base64 -d >{tmp} <<'{eof}'\n{base64_body(data)}\n"
                    f"{eof}\n"
                    f'if [ "$(sha256sum <{tmp} | cut -c1-64)" = {digest} ]; '
                    f"then mv -f {tmp} {target}; else rm -f {tmp}; false; fi",
                    f"put {pure}",
                )
                return
            for offset in range(0, len(data), self.chunk_size):
                chunk = data[offset : offset + self.chunk_size]
                # One exchange per chunk: decode into a chunk file, append it only if its sha256
                # matches, so a damaged chunk never reaches the file and is simply resent. The
                # first one makes the folder and starts the file.
                first, eof = offset == 0, _eof()
                command = (
                    f"{f'mkdir -p {parent} && ' if first else ''}"
                    f"base64 -d >{chunk_file} <<'{eof}'\n{base64_body(chunk)}\n{eof}\n"
                    f'[ "$(sha256sum <{chunk_file} | cut -c1-64)" = '
                    f"{hashlib.sha256(chunk).hexdigest()} ] "
                    f"&& cat {chunk_file} {'>' if first else '>>'}{tmp}"
                )
                self._retry(command, f"put {pure}: chunk at {offset}")
            self._checked(
                f'[ "$(sha256sum <{tmp} | cut -c1-64)" = {digest} ] && mv -f {tmp} {target} '
                f"&& rm -f {chunk_file}",
                f"put {pure}: whole-file sha256 or rename",
            )
        except BaseException:
            with contextlib.suppress(TransportError):
                self._exec(f"rm -f {tmp} {chunk_file}", self.command_timeout)
            raise

    def _get_bytes(self, path: str | PurePosixPath) -> bytes:
        source = self._remote(path)
        size, digest, head = self._get_head(source, path)
        if head is not None:
            return head  # checked against the board's sha256 already
        data = bytearray()
        for index in range((size + self.chunk_size - 1) // self.chunk_size):
            data += self._get_chunk(source, index, f"get {path}: chunk {index}")
        if len(data) == size and hashlib.sha256(data).hexdigest() != digest:
            # The whole-file sha256 came in the first answer: one more look before calling
            # the file damaged, in case it was that line the noise hit.
            digest = self._whole_sha256(source, path)
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            raise TransportError(f"get {path}: whole-file sha256 differs; damaged or changed")
        return bytes(data)

    def _get_head(self, source: str, path: str | PurePosixPath) -> tuple[int, str, bytes | None]:
        """(size, sha256, the content when it fits in one chunk, else None) in one exchange:
        three before (the size, the chunk, the whole-file sha256) for what a job's files are."""
        command = (
            f"n=$(wc -c <{source}) && echo $n && sha256sum <{source} && "
            f"if [ $n -le {self.chunk_size} ]; then base64 <{source}; fi"
        )
        problem = "no attempt"
        for _ in range(self.retries + 1):
            output, status = self._exec(command, self.command_timeout)
            if status != 0:
                raise TransportError(f"get {path}: no such file in {self._workdir} on the board")
            lines = output.split(b"\n", 2)
            sha = lines[1][:64].decode(errors="replace") if len(lines) > 1 else ""
            if not lines[0].strip().isdigit() or not _SHA256.fullmatch(sha):
                problem = "a damaged size or sha256 line"
                continue
            size = int(lines[0])
            if size > self.chunk_size:
                return size, sha, None
            try:
                body = b"".join(lines[2].split()) if len(lines) > 2 else b""
                data = base64.b64decode(body, validate=True)
            except ValueError:
                problem = "invalid base64"
                continue
            if len(data) == size and hashlib.sha256(data).hexdigest() == sha:
                return size, sha, data
            problem = "sha256 mismatch"
        raise TransportError(
            f"get {path}: not received intact after {self.retries + 1} tries ({problem})"
        )

    def _whole_sha256(self, source: str, path: str | PurePosixPath) -> str:
        for _ in range(self.retries + 1):
            output, status = self._exec(f"sha256sum <{source}", self.command_timeout)
            sha = output.strip()[:64].decode(errors="replace")
            if status == 0 and _SHA256.fullmatch(sha):
                return sha
        raise TransportError(f"get {path}: the board gave no sha256 of the file")

    def _get_chunk(self, source: str, index: int, what: str) -> bytes:
        command = (
            f"dd if={source} bs={self.chunk_size} skip={index} count=1 2>/dev/null | base64"
            f"; printf '%s%s\\n' __NPU SUM"
            f"; dd if={source} bs={self.chunk_size} skip={index} count=1 2>/dev/null"
            " | sha256sum | cut -c1-64"
        )
        problem = "no attempt"
        for _ in range(self.retries + 1):
            try:
                output, status = self._exec(command, self.command_timeout)
            except TransportError as exc:
                problem = str(exc)
                continue
            text, _, digest = output.partition(b"__NPUSUM")
            try:
                chunk = base64.b64decode(b"".join(text.split()), validate=True)
            except ValueError:
                problem = "invalid base64"
                continue
            if status == 0 and hashlib.sha256(chunk).hexdigest().encode() == digest.strip():
                return chunk
            problem = "sha256 mismatch"
        raise TransportError(
            f"{what}: not received intact after {self.retries + 1} tries ({problem})"
        )

    def _retry(self, command: str, what: str) -> None:
        problem = "no attempt"
        for _ in range(self.retries + 1):
            try:
                output, status = self._exec(command, self.command_timeout)
            except TransportError as exc:
                problem = str(exc)
                continue
            if status == 0:
                return
            raise_os_error(what, output)  # a full disk is not fixed by resending
            problem = f"the board's check failed (status {status})"
        raise TransportError(
            f"{what}: not delivered intact after {self.retries + 1} tries ({problem})"
        )
