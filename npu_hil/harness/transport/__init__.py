"""Transports: how the host reaches a board's files and processes (docs/runtime/agent.md)."""

from __future__ import annotations

from npu_hil.harness.transport.base import (
    CompletedRun,
    RemotePathError,
    Stream,
    Transport,
    remote_path,
)
from npu_hil.harness.transport.local import LocalTransport

__all__ = [
    "CompletedRun",
    "LocalTransport",
    "RemotePathError",
    "Stream",
    "Transport",
    "remote_path",
]
