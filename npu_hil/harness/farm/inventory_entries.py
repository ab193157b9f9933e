"""The parts of an inventory entry that a board of ``boards`` and a place of the ``labgrid``
section share: the names and patterns the schema uses, timeouts, power control, and the
``transport`` entry read into its typed configuration (:mod:`npu_hil.harness.transport.config`).

Below :mod:`npu_hil.harness.farm.inventory` and :mod:`npu_hil.harness.farm.labgrid_inventory` both,
so the two read a transport, a timeout or an adapter name the same way, and neither imports the
other's module back.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from npu_hil.harness.farm.inventory_reader import (
    MappingNode,
    Node,
    NodeReader,
    ScalarNode,
)
from npu_hil.harness.transport.config import (
    CONFIGS,
    KINDS,
    LocalConfig,
    SshConfig,
    TransportConfig,
    config_keys,
)
from npu_hil.harness.transport.defaults import host_key_policy_problem

__all__ = [
    "ADAPTER_RE",
    "ENV_RE",
    "FALLBACKS",
    "NAME_RE",
    "PowerConfig",
    "Timeouts",
    "read_config",
    "read_power",
    "read_timeouts",
    "read_transport",
]

FALLBACKS = ("sim", "none")
NAME_RE = re.compile(r"[a-z0-9._-]+\Z")
ADAPTER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
ENV_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
PASSWORD_ENV_RE = re.compile(r"[A-Z_][A-Z0-9_]{0,127}\Z")
"""``password_env``: a variable's name as environment variables are named (capitals, digits,
underscores), so a password written there by mistake (``hunter2``, ``S3cret!``) is refused."""


def password_env(r: Any, node: Any, path: str) -> str:
    """``password_env``: the name of the variable that holds the password, never the password.
    A value that is not such a name is refused without being shown: it may be the secret."""
    text = r.text(node, path)
    if not PASSWORD_ENV_RE.match(text):
        raise r.error(
            node,
            path,
            "expected the name of an environment variable in capitals, digits and _ "
            "(e.g. FARM_CONSOLE_PASSWORD), got a value that is not one (not shown: it may be "
            "the password itself; put the password in a variable and name the variable here)",
        )
    return str(text)


POWER_KEYS = ("command", "labgrid")
POWER_COMMAND_KEYS = ("on", "off", "cycle")
TIMEOUT_KEYS = ("connect", "load", "run", "power", "health")
_STR = "tag:yaml.org,2002:str"

C = TypeVar("C", bound=TransportConfig)


@dataclass(frozen=True)
class Timeouts:
    """Seconds: connecting to a board, loading a model, one run, a power command, a health check."""

    connect: float = 30.0
    load: float = 120.0
    run: float = 60.0
    power: float = 60.0
    health: float = 120.0


@dataclass(frozen=True)
class PowerConfig:
    """Power control: commands (argv lists) for on/off/cycle, or a labgrid place."""

    on: tuple[str, ...] | None = None
    off: tuple[str, ...] | None = None
    cycle: tuple[str, ...] | None = None
    labgrid: str | None = None


def read_transport(r: NodeReader, node: Node, path: str) -> TransportConfig:
    """A board's ``transport``: ``local``, or a mapping whose ``kind`` says which configuration
    it is (and so which keys it may hold)."""
    if isinstance(node, ScalarNode) and node.tag == _STR:
        kind = r.choice(node, path, KINDS)
        address = CONFIGS[kind].address
        if address is not None:
            # ssh and serial cannot work without a host or a port: say so here, not at run time.
            raise r.error(node, path, f"expected {{kind: {kind}, {address[0]}: ...}}, got {kind!r}")
        return LocalConfig()
    if not isinstance(node, MappingNode):
        raise r.expected(node, path, f"one of {', '.join(KINDS)} or a mapping")
    raw = r.mapping(node, path, tuple(sorted({k for kind in KINDS for k in config_keys(kind)})))
    if "kind" not in raw:
        raise r.error(node, path, f"expected a kind ({', '.join(KINDS)})")
    config = CONFIGS[r.choice(raw["kind"][1], f"{path}.kind", KINDS)]
    fields = r.mapping(node, path, config_keys(config.kind))
    if config.address is not None and config.address[0] not in fields:
        raise r.error(node, path, f"expected {config.address[1]}")
    return read_config(r, config, node, fields, path)


def read_config(
    r: NodeReader, config: type[C], node: Node, fields: dict[str, tuple[Node, Node]], path: str
) -> C:
    """The ``config`` the mapping's ``fields`` give (the others keep the configuration's
    defaults), each field read and checked at its position."""
    readers: dict[str, Callable[[Node, str], Any]] = {
        "host": r.text,
        "port": (lambda n, p: r.integer(n, p, low=1, high=65535))
        if config is SshConfig
        else r.text,
        "user": r.text,
        "key_file": r.local_path,
        "known_hosts": r.local_path,
        "host_key_policy": lambda n, p: r.checked(n, p, host_key_policy_problem),
        "baudrate": r.baudrate,
        "password_env": lambda n, p: password_env(r, n, p),
    }
    values = {
        f.name: readers[f.name](fields[f.name][1], f"{path}.{f.name}")
        for f in dataclasses.fields(config)
        if f.name in fields
    }
    try:
        return config(**values)
    except ValueError as exc:  # the configuration's own checks, beyond each field's
        raise r.error(node, path, str(exc)) from None


def read_timeouts(r: NodeReader, node: Node, path: str, base: Timeouts) -> Timeouts:
    """``base`` with the seconds the mapping gives."""
    fields = r.mapping(node, path, TIMEOUT_KEYS)
    values = {key: r.seconds(value, f"{path}.{key}") for key, (_, value) in fields.items()}
    return dataclasses.replace(base, **values)


def read_power(r: NodeReader, node: Node, path: str) -> PowerConfig:
    fields = r.mapping(node, path, POWER_KEYS)
    if len(fields) != 1:
        raise r.error(node, path, "expected exactly one of command, labgrid")
    if "labgrid" in fields:
        return PowerConfig(labgrid=r.text(fields["labgrid"][1], f"{path}.labgrid"))
    command_path = f"{path}.command"
    commands = r.mapping(fields["command"][1], command_path, POWER_COMMAND_KEYS)
    argv = {k: r.command(v, f"{command_path}.{k}") for k, (_, v) in commands.items()}
    if "cycle" not in argv and not ("on" in argv and "off" in argv):
        raise r.error(fields["command"][1], command_path, "expected cycle, or both on and off")
    return PowerConfig(on=argv.get("on"), off=argv.get("off"), cycle=argv.get("cycle"))
