"""Transports: how the host reaches a board's files and processes.

:class:`Transport` and :class:`Stream` are the interface (``npu_hil.harness.transport.base``);
:class:`LocalTransport` runs the agent on this machine. SSH and serial implement the same interface.
How to reach a board is a typed configuration per kind (:mod:`npu_hil.harness.transport.config`),
whose defaults and checks are :mod:`npu_hil.harness.transport.defaults`.
"""

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
