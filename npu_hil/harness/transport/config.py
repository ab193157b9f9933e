"""How to reach a board: one frozen dataclass per transport kind, checked when built, and the one
binding of a kind to its configuration and transport classes (:data:`CONFIGS`). The transport
modules are imported only when opened: paramiko and pyserial are heavy, simulated boards need
neither."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from npu_hil.harness.transport.base import Transport
from npu_hil.harness.transport.defaults import (
    BAUDRATE,
    SSH_PORT,
    HostKeyPolicy,
    check_host_key_policy,
)


@dataclass(frozen=True)
class LocalConfig:
    """The board is this machine: the agent runs in a subprocess here."""

    kind: ClassVar[str] = "local"
    address: ClassVar[str | None] = None
    """The field that says where the board is."""

    def open(self, *, workdir: str | Path, python: str, connect_timeout: float) -> Transport:
        from npu_hil.harness.transport.local import LocalTransport

        return LocalTransport(workdir, python=python)


@dataclass(frozen=True)
class SshConfig:
    """A board reached over SSH. ``host`` is None only for a labgrid place's template (the
    place's NetworkService gives it once acquired)."""

    kind: ClassVar[str] = "ssh"
    address: ClassVar[str | None] = "host"
    host: str | None = None
    port: int = SSH_PORT
    user: str | None = None
    key_file: str | None = None
    host_key_policy: HostKeyPolicy = "strict"
    known_hosts: str | None = None

    def __post_init__(self) -> None:
        check_host_key_policy(self.host_key_policy)
        if isinstance(self.port, bool) or not isinstance(self.port, int):
            raise ValueError(f"ssh port {self.port!r}: expected an integer")
        if not 1 <= self.port <= 65535:
            raise ValueError(f"ssh port {self.port}: expected an integer in [1, 65535]")

    def open(self, *, workdir: str | Path, python: str, connect_timeout: float) -> Transport:
        from npu_hil.harness.transport.ssh import SshTransport

        if self.host is None:
            raise ValueError("an ssh transport without a host (a labgrid place not acquired?)")
        return SshTransport(
            self.host,
            self.port,
            self.user,
            workdir=str(workdir),
            python=python,
            key_file=self.key_file,
            known_hosts=self.known_hosts,
            host_key_policy=self.host_key_policy,
            connect_timeout=connect_timeout,
        )


@dataclass(frozen=True)
class SerialConfig:
    """A board reached through a shell on its serial console: ``port`` is a device path or a
    pyserial URL (``rfc2217://host:port``); None only for a labgrid place's template."""

    kind: ClassVar[str] = "serial"
    address: ClassVar[str | None] = "port"
    port: str | None = None
    baudrate: int = BAUDRATE
    user: str | None = None
    password_env: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.baudrate, bool) or not isinstance(self.baudrate, int):
            raise ValueError(f"baudrate {self.baudrate!r}: expected an integer")
        if self.baudrate <= 0:
            raise ValueError(f"baudrate {self.baudrate}: expected a positive integer")

    def open(self, *, workdir: str | Path, python: str, connect_timeout: float) -> Transport:
        from npu_hil.harness.transport.serial_console import SerialTransport

        if self.port is None:
            raise ValueError("a serial transport without a port (a labgrid place not acquired?)")
        return SerialTransport(
            self.port,
            workdir=str(workdir),
            baudrate=self.baudrate,
            user=self.user,
            password_env=self.password_env,
            python=python,
            connect_timeout=connect_timeout,
        )


TransportConfig = LocalConfig | SshConfig | SerialConfig
CONFIGS: dict[str, type[TransportConfig]] = {
    config.kind: config for config in (LocalConfig, SshConfig, SerialConfig)
}
"""The one binding of a kind (as an inventory spells it) to its configuration class."""
KINDS = tuple(CONFIGS)
