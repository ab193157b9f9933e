"""Which distribution's files the importable ``serial`` package is: ``pyserial`` or labgrid's fork
``pyserial-labgrid`` (both install ``serial/``): the one whose recorded hash of
``serial/__init__.py`` matches the file on disk (docs/labgrid-notes.md, "Packaging")."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path

CANDIDATES = ("pyserial", "pyserial-labgrid")
_MARKER = "serial/__init__.py"


@dataclass(frozen=True)
class SerialProvider:
    """The distribution whose files ``import serial`` loads (None when no record matches, e.g.
    a copy on ``PYTHONPATH``), its version, and every candidate distribution installed."""

    distribution: str | None
    version: str | None
    installed: tuple[str, ...]
    path: Path


def serial_provider() -> SerialProvider:
    """Inspect the installed ``serial`` package (without importing it). LookupError when there is
    no ``serial`` package at all."""
    spec = importlib.util.find_spec("serial")
    if spec is None or spec.origin is None:
        raise LookupError("no 'serial' package: install pyserial (pip install pyserial)")
    init = Path(spec.origin).resolve()
    digest = base64.urlsafe_b64encode(hashlib.sha256(init.read_bytes()).digest())
    on_disk = "sha256=" + digest.rstrip(b"=").decode("ascii")  # as a RECORD file writes it
    installed: list[str] = []
    match: tuple[str, str] | None = None
    for name in CANDIDATES:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        installed.append(name)
        for record in dist.files or ():
            if str(record) != _MARKER or record.hash is None:
                continue
            located = Path(str(dist.locate_file(record))).resolve()
            recorded = f"{record.hash.mode}={record.hash.value}"
            if located == init and recorded == on_disk:
                match = (name, dist.version)
    return SerialProvider(
        distribution=match[0] if match else None,
        version=match[1] if match else None,
        installed=tuple(installed),
        path=init,
    )
