"""Transports: how the host reaches a board's files and processes.

:class:`Transport` and :class:`Session` are the interface (``harness.transport.base``);
:class:`LocalTransport` runs the agent on this machine. SSH and serial implement the same interface.
"""

from __future__ import annotations

from npu_hil.harness.transport.base import (
    CompletedRun,
    RemotePathError,
    Session,
    SessionExit,
    Transport,
    remote_path,
)
from npu_hil.harness.transport.local import LocalSession, LocalTransport

__all__ = [
    "CompletedRun",
    "LocalSession",
    "LocalTransport",
    "RemotePathError",
    "Session",
    "SessionExit",
    "Transport",
    "remote_path",
]
