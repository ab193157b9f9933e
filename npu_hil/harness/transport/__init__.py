"""Transports: how the host reaches a board's files and processes (docs/runtime/agent.md)."""

from __future__ import annotations

from npu_hil.harness.transport.base import (
    CompletedRun,
    RemotePathError,
    Stream,
    StreamExit,
    Transport,
    remote_path,
)
from npu_hil.harness.transport.config import (
    LocalConfig,
    SerialConfig,
    SshConfig,
    TransportConfig,
)
from npu_hil.harness.transport.local import LocalStream, LocalTransport

__all__ = [
    "CompletedRun",
    "LocalConfig",
    "LocalStream",
    "LocalTransport",
    "RemotePathError",
    "SerialConfig",
    "SshConfig",
    "Stream",
    "StreamExit",
    "Transport",
    "TransportConfig",
    "remote_path",
]
