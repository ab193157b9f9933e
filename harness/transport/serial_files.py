"""Files through a serial console's shell: base64 in chunks, each chunk checked by sha256 on
the receiving side and resent when it does not match, and a sha256 over the whole file before
it is renamed into place (put) or handed to the caller (get). Why this and not a binary framing
protocol is said in :mod:`harness.transport.serial_console`.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import shlex
import uuid
from pathlib import PurePosixPath

from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.base import remote_path
from npu_hil.harness.transport.serial_shell import ConsoleShell, raise_os_error

__all__ = ["B64_LINE", "ConsoleFiles", "base64_body"]

# A canonical-mode tty accepts at most 4095 characters per line; stay far below.
B64_LINE = 1024


def base64_body(data: bytes) -> str:
    """``data`` as base64 lines short enough for a canonical-mode tty."""
    text = base64.b64encode(data).decode("ascii")
    return "\n".join(text[i : i + B64_LINE] for i in range(0, len(text), B64_LINE))


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
        self._checked(f"mkdir -p {parent} && : >{tmp}", f"put {pure}: create")
        try:
            for offset in range(0, len(data), self.chunk_size):
                chunk = data[offset : offset + self.chunk_size]
                body = base64_body(chunk)
                digest = hashlib.sha256(chunk).hexdigest()
                # One exchange per chunk: decode into a chunk file, append it only if its sha256
                # matches, so a damaged chunk never reaches the file and is simply resent.
                eof = f"NPU_EOF_{uuid.uuid4().hex[:8]}"
                command = (
                    f"base64 -d >{chunk_file} <<'{eof}'\n{body}\n{eof}\n"
                    f'[ "$(sha256sum <{chunk_file} | cut -c1-64)" = {digest} ] '
                    f"&& cat {chunk_file} >>{tmp}"
                )
                self._retry(command, f"put {pure}: chunk at {offset}")
            digest = hashlib.sha256(data).hexdigest()
            self._checked(
                f'[ "$(sha256sum <{tmp} | cut -c1-64)" = {digest} ] && mv -f {tmp} {target}',
                f"put {pure}: whole-file sha256 or rename",
            )
        finally:
            with contextlib.suppress(TransportError):
                self._exec(f"rm -f {tmp} {chunk_file}", self.command_timeout)

    def _get_bytes(self, path: str | PurePosixPath) -> bytes:
        source = self._remote(path)
        output, status = self._exec(f"wc -c <{source}", self.command_timeout)
        size_text = output.strip()
        if status != 0 or not size_text.isdigit():
            raise TransportError(f"get {path}: no such file in {self._workdir} on the board")
        size = int(size_text)
        data = bytearray()
        for index in range((size + self.chunk_size - 1) // self.chunk_size):
            data += self._get_chunk(source, index, f"get {path}: chunk {index}")
        _, status = self._exec(
            f'[ "$(sha256sum <{source} | cut -c1-64)" = {hashlib.sha256(data).hexdigest()} ]',
            self.command_timeout,
        )
        if status != 0 or len(data) != size:
            raise TransportError(f"get {path}: whole-file sha256 differs; damaged or changed")
        return bytes(data)

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
