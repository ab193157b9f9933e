"""A model arriving in frames: the board's model cache, filled one chunk at a time
(``docs/runtime/agent.md``: A job, and Frames and requests). Standard library only: this runs on the
board.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping, Sequence
from mmap import mmap

from .folders import UnsafeFolder, check_folder
from .job import JobRefused
from .wire import failure, os_error_record, sha256_file

# A model is at most this large: more is no NPU model, and the cap bounds what a host can make
# the board's disk take.
MAX_MODEL_BYTES = 8 << 30
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}\Z")


class ModelRefused(JobRefused):
    """A model request the agent cannot take: the field, and why."""

    stage = "model"


def answer_model(
    root: str | None,
    request: Mapping[str, object],
    buffers: Sequence[bytearray | mmap] | None,
    damaged: Sequence[int],
) -> dict[str, object]:
    """The answer to one ``model`` request (its chunk in ``buffers``, damaged when its index is in
    ``damaged``): what the cache holds of the model now, or a typed error record."""
    try:
        folder, name, sha, size = _model_fields(root, request)
        store = _Store(folder, name, sha, size)
        if request.get("replace") is True:
            store.drop()
        if buffers is None:
            return {"op": "model", "have": store.settle()}
        offset = request.get("offset")
        if len(buffers) != 1 or not isinstance(offset, int) or isinstance(offset, bool):
            raise ModelRefused("offset", "type", "a chunk is one buffer at an integer offset")
        if damaged:  # not written: the host sends it again from what the board holds
            return {"op": "model", "have": store.settle(), "damaged": True}
        return {"op": "model", "have": store.add(offset, memoryview(buffers[0]))}
    except ModelRefused as no:
        return {"op": "model", "error": no.record()}
    except UnsafeFolder as exc:
        return {"op": "model", "error": failure("JobError", "model", str(exc), reason="folder")}
    except OSError as exc:
        return {"op": "model", "error": os_error_record(exc, "model")}


def _model_fields(root: str | None, request: Mapping[str, object]) -> tuple[str, str, str, int]:
    if root is None:
        raise ModelRefused("root", "missing", "this agent has no model cache (--root)")
    sha = request.get("sha256")
    if not isinstance(sha, str) or not _SHA256.match(sha):
        raise ModelRefused("sha256", "type", f"expected 64 lowercase hex digits, got {sha!r}")
    name = request.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ModelRefused("name", "path", f"expected a plain file name, got {name!r}")
    size = request.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_MODEL_BYTES:
        raise ModelRefused("size", "range", f"expected 0 to {MAX_MODEL_BYTES} bytes, got {size!r}")
    return os.path.join(root, sha), name, sha, size


class _Store:
    """One model's place in the cache: the finished file, or the part that grows into it."""

    def __init__(self, folder: str, name: str, sha: str, size: int) -> None:
        self.folder = folder
        self.final = os.path.join(folder, name)
        self.part = os.path.join(folder, f".{name}.part")
        self.sha = sha
        self.size = size

    def drop(self) -> None:
        for path in (self.final, self.part):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def settle(self) -> int:
        """The bytes held: the whole model when its file is there at its size (a file of another
        size is no copy of it, and goes), else the part's length (a part longer than the model
        is no beginning of it, and goes too)."""
        if os.path.lexists(self.final):
            if os.path.isfile(self.final) and os.path.getsize(self.final) == self.size:
                return self.size
            os.unlink(self.final)
        held = os.path.getsize(self.part) if os.path.isfile(self.part) else 0
        if held > self.size:
            os.unlink(self.part)
            held = 0
        if held == self.size:
            return self._finish()
        return held

    def add(self, offset: int, chunk: memoryview) -> int:
        """Write ``chunk`` at ``offset`` when that is where the part ends (a chunk sent again
        after a lost answer is not written twice); the bytes held afterwards."""
        held = self.settle()
        if offset != held or held == self.size:
            return held
        if offset + len(chunk) > self.size:
            raise ModelRefused(
                "offset",
                "range",
                f"a chunk of {len(chunk)} bytes at {offset} runs past the "
                f"model's {self.size} bytes",
            )
        self._create_folder()
        fd = os.open(self.part, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            while chunk:
                chunk = chunk[os.write(fd, chunk) :]
        finally:
            os.close(fd)
        return self.settle()

    def _finish(self) -> int:
        """The whole model is in the part: it becomes the cache's file when it hashes to its
        sha256; otherwise it goes, and the error says what came."""
        if not os.path.exists(self.part):
            self._create_folder()
            open(self.part, "wb").close()  # a model of no bytes
        actual = sha256_file(self.part)
        if actual != self.sha:
            os.unlink(self.part)
            raise ModelRefused(
                "sha256",
                "checksum",
                f"the {self.size} bytes that came hash to {actual}, not "
                f"{self.sha}; they were dropped",
            )
        os.replace(self.part, self.final)
        return self.size

    def _create_folder(self) -> None:
        root = os.path.dirname(self.folder)
        for folder in (root, self.folder):
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder, 0o700)
            check_folder(folder)
