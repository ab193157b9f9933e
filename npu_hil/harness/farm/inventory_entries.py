"""The parts of an inventory entry that a board of ``boards`` and a place of the ``labgrid``
section share: the names the schema uses, the ``defaults``, timeouts, power control, and the
``transport`` entry, each read into its typed configuration
(:mod:`npu_hil.harness.transport.config`).

Below :mod:`npu_hil.harness.farm.inventory` and :mod:`npu_hil.harness.farm.labgrid_inventory` both,
so the two read a transport, a timeout or an adapter name the same way, and neither imports the
other's module back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from npu_hil.harness.farm.backends import BoardBackend
from npu_hil.harness.farm.inventory_reader import KIND, Entry, expected, problem
from npu_hil.harness.farm.inventory_types import (
    Baudrate,
    Command,
    LocalPath,
    PasswordEnv,
    Port,
    Seconds,
    Text,
    matching,
)
from npu_hil.harness.transport.config import CONFIGS, KINDS, LocalConfig, SerialConfig, SshConfig
from npu_hil.harness.transport.defaults import HostKeyPolicy

__all__ = [
    "ADAPTER_RE",
    "NAME_RE",
    "AdapterName",
    "Defaults",
    "Fallback",
    "PowerConfig",
    "SerialLogin",
    "SshLogin",
    "Timeouts",
    "Transport",
]

Fallback = Literal["sim", "none"]
NAME_RE = re.compile(r"[a-z0-9._-]+\Z")
ADAPTER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
AdapterName = Annotated[Text, matching(ADAPTER_RE, "an adapter name")]


class Timeouts(Entry):
    """Seconds: connecting to a board, loading a model, one run, a power command, a health
    check. In the file, the keys given replace the defaults' one by one."""

    connect: Seconds = 30.0
    load: Seconds = 120.0
    run: Seconds = 60.0
    power: Seconds = 60.0
    health: Seconds = 120.0

    def over(self, base: Timeouts) -> Timeouts:
        """``base`` with the seconds this entry gives."""
        return base.model_copy(update=self.model_dump(exclude_unset=True))


@dataclass(frozen=True)
class PowerConfig:
    """Power control: commands (argv lists) for on/off/cycle, or a labgrid place."""

    on: tuple[str, ...] | None = None
    off: tuple[str, ...] | None = None
    cycle: tuple[str, ...] | None = None
    labgrid: str | None = None


class PowerCommands(Entry):
    on: Command | None = None
    off: Command | None = None
    cycle: Command | None = None

    @model_validator(mode="after")
    def _enough(self) -> PowerCommands:
        if self.cycle is None and (self.on is None or self.off is None):
            raise problem("expected cycle, or both on and off")
        return self


class Power(Entry):
    """``power: {command: {on, off, cycle}}`` or ``power: {labgrid: place}``."""

    command: PowerCommands | None = None
    labgrid: Text | None = None

    @model_validator(mode="after")
    def _one(self) -> Power:
        if (self.command is None) == (self.labgrid is None):
            raise problem("expected exactly one of command, labgrid")
        return self

    def config(self) -> PowerConfig:
        if self.command is None:
            return PowerConfig(labgrid=self.labgrid)
        return PowerConfig(**self.command.model_dump())


class SshLogin(Entry):
    """How to log in over SSH; the labgrid section's ``ssh`` (a place's resources say where)."""

    user: Text | None = None
    key_file: LocalPath | None = None
    host_key_policy: HostKeyPolicy | None = None
    known_hosts: LocalPath | None = None

    def config(self) -> SshConfig:
        """The configuration, with its defaults where the file says nothing."""
        return SshConfig(**self.model_dump(exclude={KIND}, exclude_unset=True))


class SerialLogin(Entry):
    """How to log in on a serial console; the labgrid section's ``serial``."""

    user: Text | None = None
    password_env: PasswordEnv | None = None

    def config(self) -> SerialConfig:
        return SerialConfig(**self.model_dump(exclude={KIND}, exclude_unset=True))


class LocalEntry(Entry):
    kind: Literal["local"]

    def config(self) -> LocalConfig:
        return LocalConfig()


class SshEntry(SshLogin):
    kind: Literal["ssh"]
    host: Text = Field(description="a host for an ssh transport")
    port: Port | None = None


class SerialEntry(SerialLogin):
    kind: Literal["serial"]
    port: Text = Field(description="a port (a device path or URL) for serial")
    baudrate: Baudrate | None = None


def _shorthand(value: Any) -> Any:
    """``transport: local`` is ``{kind: local}``; ``ssh`` or ``serial`` alone cannot say where
    the board is (so it is refused here, not when the board is first used)."""
    if isinstance(value, dict):
        if KIND not in value:
            raise problem(f"expected a kind ({', '.join(KINDS)})")
        if value[KIND] not in KINDS:
            raise expected(f"one of {', '.join(KINDS)}", choices=KINDS, at=(KIND,))
        return value
    if not isinstance(value, str):
        raise expected(f"one of {', '.join(KINDS)} or a mapping")
    if value not in KINDS:
        raise expected(f"one of {', '.join(KINDS)}", choices=KINDS)
    address = CONFIGS[value].address
    if address is not None:
        raise problem(f"expected {{kind: {value}, {address[0]}: ...}}, got {value!r}")
    return {KIND: value}


Transport = Annotated[
    LocalEntry | SshEntry | SerialEntry,
    Field(discriminator=KIND),
    BeforeValidator(_shorthand),
]
"""A board's ``transport``: ``local``, or a mapping whose ``kind`` says which configuration it
is (and so which keys it may hold). A board's replaces the default one as a whole: mixing an
SSH host with serial settings would be meaningless."""


class Defaults(Entry):
    """What boards (and labgrid places) take unless they say otherwise."""

    backend: BoardBackend | None = None
    fallback: Fallback = "none"
    transport: Transport | None = None
    python: Text | None = None
    workdir: Text | None = None
    adapter: AdapterName | None = None
    timeouts: Timeouts = Timeouts()
