"""What a compiled model file says about itself (:class:`ArtifactInfo`), read by the reader of its
vendor unit (``Vendor.read_artifact``, picked by the file's suffix): bounded, never the whole
weights; a field no reader can read with facts behind it stays ``None`` (unknown, never guessed).
What each reader reads: docs/model-developer/preflight.md."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from typing_extensions import TypedDict

from npu_hil.harness.errors import ArtifactError

__all__ = [
    "MAX_HEADER_BYTES",
    "MAX_INFO_BYTES",
    "ArtifactInfo",
    "open_bounded",
    "parse_version",
    "read_artifact",
    "reader_for",
]

MAX_HEADER_BYTES = 8 << 10
"""The most a reader takes from the start of a file (headers are far smaller)."""
MAX_INFO_BYTES = 8 << 20
"""The largest model-information block a reader parses (an RKNN file's JSON grows with the
graph's node count: a few KiB for a small model, a few hundred for a large detector)."""


class ArtifactDocument(TypedDict):
    """:meth:`ArtifactInfo.to_dict`: a compiled model's own fields as ``npu-hil models`` prints
    them and the run's record keeps them."""

    path: str
    vendor: str
    format: str
    format_version: int | str | None
    toolkit_version: str | None
    target_platforms: list[str]
    compiler_version: str | None
    extras: dict[str, int | str]
    unverified: list[str]


@dataclass(frozen=True)
class ArtifactInfo:
    """A compiled model's own statement of what it is and what it was built for."""

    path: str
    vendor: str
    format: str
    """The container the reader recognised (``rknn``, ``rknn-mini``, ``nef``, ``hbm``)."""
    format_version: int | str | None
    toolkit_version: str | None
    """The version of the toolkit that wrote the file (rknn-toolkit2's ``2.5.0``)."""
    target_platforms: tuple[str, ...]
    """The platforms the file names as its targets; empty when the file does not say (or the
    reader cannot read it with facts behind it)."""
    compiler_version: str | None = None
    extras: dict[str, int | str] = field(default_factory=dict)
    unverified: tuple[str, ...] = ()
    """What the reader could not read, and why (each says so in words)."""

    @property
    def name(self) -> str:
        return Path(self.path).name

    def to_dict(self) -> ArtifactDocument:
        return {
            "path": self.path,
            "vendor": self.vendor,
            "format": self.format,
            "format_version": self.format_version,
            "toolkit_version": self.toolkit_version,
            "target_platforms": list(self.target_platforms),
            "compiler_version": self.compiler_version,
            "extras": dict(self.extras),
            "unverified": list(self.unverified),
        }


_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: object) -> tuple[int, int, int] | None:
    """The leading ``major.minor[.patch]`` of a version string (``"1.6.0 (9a7b5d24c@2023-12-13)"``
    → ``(1, 6, 0)``, ``"v2.5.0"`` → ``(2, 5, 0)``), or None when there is none: a string
    without a version is unknown, never version 0."""
    if not isinstance(text, str):
        return None
    match = _VERSION.match(text.strip())
    if match is None:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def open_bounded(path: str | os.PathLike[str], what: str) -> tuple[BinaryIO, int]:
    """An open binary handle on a regular file and its size; anything else (a folder, a FIFO,
    a device, a missing file) is an ArtifactError naming it. Opened without blocking, so a FIFO
    named like a model never hangs the reader."""
    where = os.fspath(path)
    try:
        fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ArtifactError(f"{where}: cannot open {what}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ArtifactError(f"{where}: expected {what} in a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb"), info.st_size


def reader_for(path: str | os.PathLike[str], target: str) -> Callable[[Path], ArtifactInfo] | None:
    """The reader of ``target``'s vendor for ``path`` (by the vendor's artifact suffixes), or
    None when the file is not one of that vendor's compiled models (an ONNX file)."""
    from npu_hil.targets.registry import unit_for

    unit = unit_for(target)
    if Path(path).suffix.lower() not in unit.artifact_suffixes:
        return None
    return unit.read_artifact


def read_artifact(path: str | os.PathLike[str], target: str) -> ArtifactInfo | None:
    """What the compiled model at ``path`` says about itself, read by the reader of
    ``target``'s vendor; None when the file is not one of that vendor's compiled models."""
    reader = reader_for(path, target)
    return None if reader is None else reader(Path(path))
