"""The board inventory (``inventory.yaml``): what each board *is*, as plain data.

Parsed with ``yaml.compose`` so every node keeps its position: an error names the file, line and
column, the key path and what was expected, e.g.
``farm.yaml:23:7: boards[4].transport.port: expected an integer, got "22a"``. Secrets never belong
in the file: a literal ``password`` or ``key`` is refused in favour of ``password_env`` (the name of
an environment variable) and ``key_file``.

Schema::

    defaults: {backend, fallback, transport, python, workdir, adapter, timeouts}
    manifest: models/manifest.yaml        # relative to this file
    boards:
      - name: rk3588-01                   # [a-z0-9._-]+, unique
        target: rk3588                    # one of the codec's 15 targets
        backend: hw                       # hw | sim
        transport: {kind: ssh, host: 10.0.0.5, port: 22, user: root, key_file: ~/.ssh/farm}
        fallback: sim                     # sim | none: where --backend auto may go instead
        tags: [rack-a]
        adapter: rknn_native              # default per vendor; sim boards use ``sim``
        python: /usr/bin/python3          # the board's interpreter
        workdir: /tmp/npu-hil             # the board's working directory
        power: {command: {on: ..., off: ..., cycle: ...}} | {labgrid: place-name}
        timeouts: {connect, load, run, power, health}   # seconds, in (0, 86400]
    labgrid: {coordinator: HOST:PORT, places: [...], tags: {...}, wait: 600, ...}
                                          # places of a labgrid coordinator as boards
                                          # (harness.farm.labgrid_inventory); ``boards`` may
                                          # then be left out

Numbers are plain decimals (:mod:`harness.farm.inventory_yaml` refuses YAML 1.1's base 60, octal
and hex forms, ``.inf`` and tags); text fields hold no control characters or lone surrogates.

``transport: local`` is short for ``{kind: local}``. A board's ``transport`` replaces the default
one as a whole (mixing an SSH host with serial settings would be meaningless); ``timeouts`` merge
key by key.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import importlib
import json
import os
import pwd
import re
import shlex
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from npu_hil.harness.codec import known_targets
from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.farm.inventory_yaml import (
    MAX_CHARS,
    YamlProblem,
    check_tags,
    compose,
    plain_integer,
    plain_number,
)
from npu_hil.harness.redact import find_secret, secret_key_name
from npu_hil.targets.registry import HW_ADAPTERS as HW_ADAPTERS  # re-exported
from npu_hil.targets.registry import VENDOR_OF as VENDOR_OF  # re-exported

if TYPE_CHECKING:
    from npu_hil.harness.farm.labgrid_inventory import LabgridSection

__all__ = [
    "Board",
    "Inventory",
    "InventoryError",
    "PowerConfig",
    "Timeouts",
    "TransportConfig",
    "load_inventory",
    "parse_inventory",
    "read_inventory",
]

BACKENDS = ("hw", "sim")
FALLBACKS = ("sim", "none")
TRANSPORT_KINDS = ("local", "ssh", "serial")
HOST_KEY_POLICIES = ("strict", "accept-new")
# VENDOR_OF (target → vendor) and HW_ADAPTERS (vendor → the runtime adapter a real board uses
# unless the inventory names another) are the vendor units' (targets.registry).
SIM_ADAPTER = "sim"

NAME_RE = re.compile(r"[a-z0-9._-]+\Z")
ADAPTER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
ENV_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

TOP_KEYS = ("defaults", "boards", "manifest", "labgrid")
DEFAULT_KEYS = ("backend", "fallback", "transport", "python", "workdir", "adapter", "timeouts")
BOARD_KEYS = (
    "name", "target", "backend", "transport", "fallback", "tags", "adapter", "python", "workdir",
    "power", "timeouts",
)  # fmt: skip
TRANSPORT_KEYS = {
    "local": ("kind",),
    "ssh": ("kind", "host", "port", "user", "key_file", "host_key_policy", "known_hosts"),
    "serial": ("kind", "port", "baudrate", "user", "password_env"),
}
POWER_KEYS = ("command", "labgrid")
POWER_COMMAND_KEYS = ("on", "off", "cycle")
TIMEOUT_KEYS = ("connect", "load", "run", "power", "health")
SECRETS = {"password": "password_env (the name of an environment variable)", "key": "key_file"}
MAX_SECONDS = 24 * 3600.0
"""No connect, load, run, power or health step waits longer than a day: a larger timeout is a
typo (and ``.inf`` or 1e300 overflow the transports' timers)."""
MAX_TEXT = 4096
"""Longer than any path, host, name or command argument."""
BAUDRATES = (
    300, 600, 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 500000, 576000,
    921600, 1000000, 1152000, 1500000, 2000000, 2500000, 3000000, 3500000, 4000000,
)  # fmt: skip
"""The rates a serial port (termios) can be set to; Rockchip's debug UART runs at 1500000."""
# What no path, host, name or argument may hold: C0 controls, DEL, bidi overrides, lone surrogates.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_BOOL = "tag:yaml.org,2002:bool"
_BINARY = "tag:yaml.org,2002:binary"

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_NULL = "tag:yaml.org,2002:null"
_SEQ = "tag:yaml.org,2002:seq"

T = TypeVar("T")

# PyYAML ships no type information; the project reads it untyped, as the manifest does.
yaml: Any = importlib.import_module("yaml")
MappingNode: Any = yaml.nodes.MappingNode
ScalarNode: Any = yaml.nodes.ScalarNode
SequenceNode: Any = yaml.nodes.SequenceNode
Node = Any


class InventoryError(NpuHilError):
    """An inventory that cannot be used: the message is ``file:line:column: key.path: ...``."""


@dataclass(frozen=True)
class Timeouts:
    """Seconds: connecting to a board, loading a model, one run, a power command, a health check."""

    connect: float = 30.0
    load: float = 120.0
    run: float = 60.0
    power: float = 60.0
    health: float = 120.0


@dataclass(frozen=True)
class TransportConfig:
    """How to reach a board. ``port`` is an integer for SSH and a device path or URL
    (``/dev/ttyUSB0``, ``rfc2217://host:port``) for serial."""

    kind: str = "local"
    host: str | None = None
    port: int | str | None = None
    user: str | None = None
    key_file: str | None = None
    host_key_policy: str = "strict"
    known_hosts: str | None = None
    baudrate: int | None = None
    password_env: str | None = None


@dataclass(frozen=True)
class PowerConfig:
    """Power control: commands (argv lists) for on/off/cycle, or a labgrid place."""

    on: tuple[str, ...] | None = None
    off: tuple[str, ...] | None = None
    cycle: tuple[str, ...] | None = None
    labgrid: str | None = None


@dataclass(frozen=True)
class Board:
    """One board of the inventory."""

    name: str
    target: str
    backend: str
    transport: TransportConfig
    fallback: str
    adapter: str
    tags: tuple[str, ...] = ()
    python: str | None = None
    workdir: str | None = None
    power: PowerConfig | None = None
    timeouts: Timeouts = field(default_factory=Timeouts)
    place: str | None = None
    """The labgrid place this board is (its transport's address comes from the place)."""

    @property
    def vendor(self) -> str:
        """The name of the target's vendor unit (``targets.registry``)."""
        return VENDOR_OF[self.target]

    @property
    def simulated(self) -> bool:
        """Whether the inventory declares this board a simulated one."""
        return self.backend == "sim"


@dataclass(frozen=True)
class Inventory:
    """A loaded inventory: the boards in file order, and where the model manifest is."""

    boards: tuple[Board, ...]
    manifest: Path | None = None
    source: str = "<inventory>"
    labgrid: LabgridSection | None = None

    def board(self, name: str) -> Board:
        for board in self.boards:
            if board.name == name:
                return board
        known = ", ".join(b.name for b in self.boards) or "none"
        raise InventoryError(f"{self.source}: no board {name!r} (boards: {known})")


# --- reading nodes ------------------------------------------------------------------------------


class _Reader:
    """Typed access to composed YAML nodes; every failure carries the node's position."""

    def __init__(self, source: str, base: Path | None = None) -> None:
        self.source = source
        self.base = base if base is not None else Path(".")

    def error(self, node: Node, path: str, message: str) -> InventoryError:
        mark = node.start_mark
        return InventoryError(f"{self.source}:{mark.line + 1}:{mark.column + 1}: {path}: {message}")

    def not_number(self, node: Node, path: str, what: str, why: str) -> InventoryError:
        return self.error(node, path, f"expected {what}, got {self.describe(node)}: {why}")

    def expected(self, node: Node, path: str, what: str) -> InventoryError:
        return self.error(node, path, f"expected {what}, got {self.describe(node)}")

    def describe(self, node: Node) -> str:
        """What came, shown short and escaped (the message goes to records and reports)."""
        if isinstance(node, MappingNode):
            return "a mapping"
        if isinstance(node, SequenceNode):
            return "a list"
        if node.tag == _NULL:
            return "nothing (null)"
        value = str(node.value)
        return shown(value, quoted=node.tag == _STR or not value)

    def mapping(
        self, node: Node, path: str, allowed: tuple[str, ...]
    ) -> dict[str, tuple[Node, Node]]:
        """Keys → (key node, value node); unknown and duplicate keys and secrets refused."""
        if not isinstance(node, MappingNode):
            raise self.expected(node, path, "a mapping")
        out: dict[str, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            # Keys are read as written: YAML 1.1 would make ``on:``/``off:`` booleans.
            if not isinstance(key_node, ScalarNode) or key_node.tag == _NULL:
                raise self.expected(key_node, path, "a key (text)")
            key = str(key_node.value)
            if len(key) > 64 or _UNPRINTABLE.search(key):
                raise self.expected(key_node, path, f"a key (one of {', '.join(allowed)})")
            where = f"{path}.{key}" if path else key
            if secret_use(key) is not None:
                raise self.error(
                    key_node,
                    where,
                    f"secrets do not belong in the inventory; use {secret_use(key)} instead",
                )
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise self.error(
                    key_node, where, f"unknown key (expected one of {', '.join(allowed)}){hint}"
                )
            if key in out:
                raise self.error(key_node, where, "duplicate key")
            out[key] = (key_node, value_node)
        return out

    def text(self, node: Node, path: str) -> str:
        if not isinstance(node, ScalarNode) or node.tag != _STR or not node.value:
            error = self.expected(node, path, "a non-empty string")
            if isinstance(node, ScalarNode) and node.tag in (_BOOL, _INT, _FLOAT) and node.value:
                # YAML 1.1 turns yes/no/on/off, 022 or 1:30 into something else than text.
                kind = {_BOOL: "a boolean", _INT: "an integer", _FLOAT: "a number"}[node.tag]
                raise InventoryError(f"{error.message} (YAML reads it as {kind}: quote it)")
            raise error
        value = str(node.value)
        bad = _UNPRINTABLE.search(value)
        if bad:
            code = ord(bad.group())
            raise self.error(
                node,
                path,
                f"expected printable text, got {self.describe(node)}: "
                f"U+{code:04X} at character {bad.start() + 1}",
            )
        if len(value) > MAX_TEXT:
            raise self.expected(node, path, f"at most {MAX_TEXT} characters")
        return value

    def local_path(self, node: Node, path: str) -> str:
        """A file on this machine: ``~`` expanded, relative to the inventory's folder (a farm's
        inventory travels with its keys, whatever folder the harness is started from)."""
        text = self.text(node, path)
        if text.startswith("~"):
            head, _, rest = text.partition("/")
            if head == "~":
                home = os.environ.get("HOME") or _home_of_uid()
                if not home:
                    raise self.error(node, path, f"{text}: no home folder (HOME is not set)")
            else:
                try:
                    home = pwd.getpwnam(head[1:]).pw_dir
                except (KeyError, ValueError):
                    hint = f" (did you mean ~/{text[1:]}?)" if head.startswith("~.") else ""
                    raise self.error(
                        node, path, f"{text}: {head} names no user of this machine{hint}"
                    ) from None
            text = os.path.join(home, rest) if rest else home
        return self.resolved(node, path, self.base / text)

    def resolved(self, node: Node, path: str, file: Path) -> str:
        try:
            return str(file.resolve())
        except RuntimeError:  # Python < 3.13 raises this for a loop of symbolic links
            raise self.error(node, path, f"{file}: a loop of symbolic links") from None
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise self.error(node, path, f"{file}: {reason}") from None

    def integer(self, node: Node, path: str, *, low: int = 0, high: int | None = None) -> int:
        bounds = f"in [{low}, {high}]" if high is not None else f">= {low}"
        if not isinstance(node, ScalarNode) or node.tag != _INT:
            raise self.expected(node, path, "an integer")
        try:
            number = plain_integer(str(node.value))
        except ValueError as exc:
            raise self.not_number(node, path, f"an integer {bounds}", str(exc)) from None
        if number < low or (high is not None and number > high):
            raise self.expected(node, path, f"an integer {bounds}")
        return number

    def number(self, node: Node, path: str, what: str) -> float:
        """A finite plain number (an integer or a decimal), for ``what`` in the errors."""
        if not isinstance(node, ScalarNode) or node.tag not in (_INT, _FLOAT):
            raise self.expected(node, path, what)
        try:
            return plain_number(str(node.value))
        except ValueError as exc:
            raise self.not_number(node, path, what, str(exc)) from None

    def seconds(self, node: Node, path: str) -> float:
        what = f"a number of seconds in (0, {MAX_SECONDS:.0f}] (at most 24 h)"
        number = self.number(node, path, what)
        if not 0 < number <= MAX_SECONDS:
            raise self.expected(node, path, what)
        return number

    def baudrate(self, node: Node, path: str) -> int:
        rate = self.integer(node, path, low=0)
        if rate not in BAUDRATES:
            close = min(BAUDRATES, key=lambda b: abs(b - rate))
            raise self.expected(
                node, path, f"a baud rate a serial port can be set to (e.g. {close}, 115200)"
            )
        return rate

    def choice(self, node: Node, path: str, choices: tuple[str, ...]) -> str:
        if isinstance(node, ScalarNode) and node.tag == _STR and node.value in choices:
            return str(node.value)
        close: list[str] = []
        if isinstance(node, ScalarNode):
            close = difflib.get_close_matches(str(node.value), choices, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        error = self.expected(node, path, f"one of {', '.join(choices)}")
        raise InventoryError(f"{error.message}{hint}")

    def pattern(self, node: Node, path: str, regex: re.Pattern[str], what: str) -> str:
        text = self.text(node, path)
        if not regex.match(text):
            raise self.expected(node, path, what)
        return text

    def strings(self, node: Node, path: str) -> tuple[str, ...]:
        if not isinstance(node, SequenceNode):
            raise self.expected(node, path, "a list of strings")
        return tuple(self.text(item, f"{path}[{i}]") for i, item in enumerate(node.value))

    def word(self, node: Node, path: str) -> str:
        if not isinstance(node, ScalarNode) or node.tag == _NULL or not node.value:
            raise self.expected(node, path, "a command-line argument")
        value = str(node.value)
        if _UNPRINTABLE.search(value) or len(value) > MAX_TEXT:
            raise self.expected(node, path, "a command-line argument of printable text")
        return value

    def command(self, node: Node, path: str) -> tuple[str, ...]:
        """A command as a string (split like a shell would, but never run by one) or a list."""
        if isinstance(node, SequenceNode):
            # Arguments as written: ``[pdu-ctl, on, 4]`` means the words, not a bool and an int.
            argv = tuple(self.word(item, f"{path}[{i}]") for i, item in enumerate(node.value))
        else:
            try:
                argv = tuple(shlex.split(self.text(node, path)))
            except ValueError as exc:
                raise self.error(node, path, f"cannot split the command: {exc}") from None
        if not argv:
            raise self.expected(node, path, "a command")
        return argv


# --- the schema ---------------------------------------------------------------------------------


def _optional(
    fields: dict[str, tuple[Node, Node]], key: str, read: Callable[[Node, str], T], path: str
) -> T | None:
    if key not in fields:
        return None
    return read(fields[key][1], f"{path}.{key}" if path else key)


def _transport(r: _Reader, node: Node, path: str) -> TransportConfig:
    if isinstance(node, ScalarNode) and node.tag == _STR:
        kind = r.choice(node, path, TRANSPORT_KINDS)
        if kind != "local":
            # ssh and serial cannot work without a host or a port: say so here, not at run time.
            need = "host" if kind == "ssh" else "port"
            raise r.error(node, path, f"expected {{kind: {kind}, {need}: ...}}, got {kind!r}")
        return TransportConfig(kind=kind)
    if not isinstance(node, MappingNode):
        raise r.expected(node, path, f"one of {', '.join(TRANSPORT_KINDS)} or a mapping")
    raw = r.mapping(node, path, tuple(sorted({k for ks in TRANSPORT_KEYS.values() for k in ks})))
    if "kind" not in raw:
        raise r.error(node, path, f"expected a kind ({', '.join(TRANSPORT_KINDS)})")
    kind = r.choice(raw["kind"][1], f"{path}.kind", TRANSPORT_KINDS)
    fields = r.mapping(node, path, TRANSPORT_KEYS[kind])
    if kind == "ssh":
        if "host" not in fields:
            raise r.error(node, path, "expected a host for an ssh transport")
        return TransportConfig(
            kind=kind,
            host=_optional(fields, "host", r.text, path),
            port=_optional(fields, "port", lambda n, p: r.integer(n, p, low=1, high=65535), path)
            or 22,
            user=_optional(fields, "user", r.text, path),
            key_file=_optional(fields, "key_file", r.local_path, path),
            host_key_policy=_optional(
                fields, "host_key_policy", lambda n, p: r.choice(n, p, HOST_KEY_POLICIES), path
            )
            or "strict",
            known_hosts=_optional(fields, "known_hosts", r.local_path, path),
        )
    if kind == "serial":
        if "port" not in fields:
            raise r.error(node, path, "expected a port (a device path or URL) for serial")
        return TransportConfig(
            kind=kind,
            port=_optional(fields, "port", r.text, path),
            baudrate=_optional(fields, "baudrate", r.baudrate, path) or 115200,
            user=_optional(fields, "user", r.text, path),
            password_env=_optional(
                fields,
                "password_env",
                lambda n, p: r.pattern(n, p, ENV_RE, "the name of an environment variable"),
                path,
            ),
        )
    return TransportConfig(kind=kind)


def _timeouts(r: _Reader, node: Node, path: str, base: Timeouts) -> Timeouts:
    fields = r.mapping(node, path, TIMEOUT_KEYS)
    values = {key: r.seconds(value, f"{path}.{key}") for key, (_, value) in fields.items()}
    return Timeouts(**{**base.__dict__, **values})


def _power(r: _Reader, node: Node, path: str) -> PowerConfig:
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


@dataclass
class _Defaults:
    backend: str | None = None
    fallback: str = "none"
    transport: TransportConfig | None = None
    python: str | None = None
    workdir: str | None = None
    adapter: str | None = None
    timeouts: Timeouts = field(default_factory=Timeouts)


def _defaults(r: _Reader, node: Node) -> _Defaults:
    fields = r.mapping(node, "defaults", DEFAULT_KEYS)
    out = _Defaults()
    out.backend = _optional(fields, "backend", lambda n, p: r.choice(n, p, BACKENDS), "defaults")
    out.fallback = (
        _optional(fields, "fallback", lambda n, p: r.choice(n, p, FALLBACKS), "defaults") or "none"
    )
    out.transport = _optional(fields, "transport", lambda n, p: _transport(r, n, p), "defaults")
    out.python = _optional(fields, "python", r.text, "defaults")
    out.workdir = _optional(fields, "workdir", r.text, "defaults")
    out.adapter = _optional(
        fields, "adapter", lambda n, p: r.pattern(n, p, ADAPTER_RE, "an adapter name"), "defaults"
    )
    if "timeouts" in fields:
        out.timeouts = _timeouts(r, fields["timeouts"][1], "defaults.timeouts", out.timeouts)
    return out


def _board(r: _Reader, node: Node, path: str, defaults: _Defaults) -> Board:
    fields = r.mapping(node, path, BOARD_KEYS)
    for required in ("name", "target"):
        if required not in fields:
            raise r.error(node, path, f"expected a {required}")
    name = r.pattern(fields["name"][1], f"{path}.name", NAME_RE, "a name of [a-z0-9._-] characters")
    target = r.choice(fields["target"][1], f"{path}.target", known_targets())
    transport = (
        _optional(fields, "transport", lambda n, p: _transport(r, n, p), path)
        or defaults.transport
        or TransportConfig()
    )
    backend = _optional(fields, "backend", lambda n, p: r.choice(n, p, BACKENDS), path)
    # Without a word from the file, a board on the local transport is a simulated one.
    backend = backend or defaults.backend or ("sim" if transport.kind == "local" else "hw")
    adapter = _optional(
        fields, "adapter", lambda n, p: r.pattern(n, p, ADAPTER_RE, "an adapter name"), path
    )
    if adapter is None:
        # defaults.adapter is for real boards: a simulated board always runs the sim adapter.
        adapter = (
            SIM_ADAPTER if backend == "sim" else defaults.adapter or HW_ADAPTERS[VENDOR_OF[target]]
        )
    timeouts = defaults.timeouts
    if "timeouts" in fields:
        timeouts = _timeouts(r, fields["timeouts"][1], f"{path}.timeouts", timeouts)
    return Board(
        name=name,
        target=target,
        backend=backend,
        transport=transport,
        fallback=_optional(fields, "fallback", lambda n, p: r.choice(n, p, FALLBACKS), path)
        or defaults.fallback,
        adapter=adapter,
        tags=_optional(fields, "tags", r.strings, path) or (),
        python=_optional(fields, "python", r.text, path) or defaults.python,
        workdir=_optional(fields, "workdir", r.text, path) or defaults.workdir,
        power=_optional(fields, "power", lambda n, p: _power(r, n, p), path),
        timeouts=timeouts,
    )


def shown(value: str, *, quoted: bool = True, limit: int = 60) -> str:
    """``value`` for an error message: JSON-escaped (no control character, no lone surrogate
    reaches a report) and cut to about ``limit`` characters."""
    cut = value if len(value) <= limit else value[:limit]
    text = json.dumps(cut)
    if not quoted and text[1:-1] == cut:
        text = cut
    elif not quoted:
        text = text[1:-1]
    if len(value) > limit:
        text += f"... ({len(value)} characters)"
    return text


def secret_use(key: str) -> str | None:
    """What to write instead of the secret a key names (``password``, ``Key``, ``api_token``),
    or None when it names none."""
    name = key.strip().lower()
    if name in SECRETS:
        return SECRETS[name]
    if secret_key_name(name):
        return "key_file (the key's path) and password_env (the name of an environment variable)"
    return None


def _texts(node: Node) -> list[str]:
    """A scalar's text as written, and for ``!!binary`` also the decoded bytes as text: a key
    base64-encoded under a tag is still a key."""
    value = str(node.value)
    texts = [value]
    if node.tag == _BINARY:
        try:
            decoded = base64.b64decode("".join(value.split()), validate=True)
        except (binascii.Error, ValueError):
            return texts
        texts.append(decoded.decode("utf-8", "replace"))
    return texts


def _home_of_uid() -> str | None:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


def _refuse_secrets(r: _Reader, root: Node) -> None:
    """Refuse key material or a password anywhere in the file (any field, tag keys included),
    before a field is read: a key pasted into ``key_file:`` would otherwise be taken as a path
    and quoted by the connect error in every report. The message never repeats the secret."""
    advice = "use key_file (the key's path) and password_env (the name of an environment variable)"
    pending: list[tuple[Node, str]] = [(root, "")]
    seen: set[int] = set()
    while pending:
        node, path = pending.pop()
        if id(node) in seen:  # an alias met again
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            for key_node, value_node in node.value:
                names = _texts(key_node) if isinstance(key_node, ScalarNode) else []
                shown_key = shown(names[0], quoted=False) if names else ""
                where = f"{path}.{shown_key}" if path else shown_key
                use = next((u for u in map(secret_use, names) if u is not None), None)
                if use is not None:
                    raise r.error(
                        key_node,
                        where,
                        f"secrets do not belong in the inventory; use {use} instead",
                    )
                pending.append((key_node, where))
                pending.append((value_node, where))
        elif isinstance(node, SequenceNode):
            pending.extend((item, f"{path}[{i}]") for i, item in enumerate(node.value))
        elif isinstance(node, ScalarNode) and isinstance(node.value, str):
            what = next(filter(None, map(find_secret, _texts(node))), None)
            if what is not None:
                raise r.error(
                    node,
                    path or "(top)",
                    f"holds {what}; secrets do not belong in the inventory: {advice}",
                )


def parse_inventory(
    text: str, *, source: str = "<inventory>", base: str | os.PathLike[str] = "."
) -> Inventory:
    """Check inventory YAML ``text``; ``base`` is the folder relative paths start from."""
    r = _Reader(source, Path(base))
    try:
        root = compose(text)
    except YamlProblem as problem:
        _refuse_secret_text(source, text)
        raise InventoryError(
            f"{source}:{problem.line}:{problem.column}: {problem.message}"
        ) from None
    if root is None:
        raise InventoryError(f"{source}:1:1: expected a mapping with boards, got an empty file")
    _refuse_secrets(r, root)
    try:
        check_tags(root)
    except YamlProblem as problem:
        raise InventoryError(
            f"{source}:{problem.line}:{problem.column}: {problem.message}"
        ) from None
    top = r.mapping(root, "", TOP_KEYS)
    defaults = _defaults(r, top["defaults"][1]) if "defaults" in top else _Defaults()
    labgrid: LabgridSection | None = None
    if "labgrid" in top:
        # Imported here: the section's module builds on this one's reader and types.
        from npu_hil.harness.farm.labgrid_inventory import parse_labgrid_section

        labgrid = parse_labgrid_section(r, top["labgrid"][1], defaults, known_targets())
    if "boards" not in top and labgrid is None:
        raise r.error(root, "boards", "expected a list of boards")
    boards_node = top["boards"][1] if "boards" in top else SequenceNode(_SEQ, [])
    if not isinstance(boards_node, SequenceNode):
        raise r.expected(boards_node, "boards", "a list of boards")
    boards: list[Board] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(boards_node.value):
        board = _board(r, item, f"boards[{index}]", defaults)
        if board.name in seen:
            name_node = r.mapping(item, f"boards[{index}]", BOARD_KEYS)["name"][1]
            raise r.error(
                name_node,
                f"boards[{index}].name",
                f"duplicate board name {board.name!r} (also boards[{seen[board.name]}])",
            )
        seen[board.name] = index
        boards.append(board)
    manifest = _optional(top, "manifest", r.text, "")
    return Inventory(
        boards=tuple(boards),
        manifest=Path(r.resolved(top["manifest"][1], "manifest", Path(base) / manifest))
        if manifest
        else None,
        source=source,
        labgrid=labgrid,
    )


def _refuse_secret_text(source: str, text: str) -> None:
    """A file that is not even YAML may still hold a pasted key: say that rather than where the
    YAML broke (the user's next step is removing the key, not fixing the indentation)."""
    for index, line in enumerate(text.splitlines()):
        what = find_secret(line)
        if what is not None:
            raise InventoryError(
                f"{source}:{index + 1}:1: holds {what}; secrets do not belong in the inventory: "
                "use key_file (the key's path) and password_env (the name of an environment "
                "variable)"
            )
    if find_secret(text) is not None:
        raise InventoryError(f"{source}:1:1: holds key material; secrets do not belong there")


def _read_text(file: Path) -> str:
    """The file's text: a regular file of at most MAX_CHARS bytes, opened without blocking (a
    FIFO or a device as the inventory is refused, not waited on or read forever)."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InventoryError(f"{file}: no such inventory file") from None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InventoryError(f"{file}: cannot read the inventory: {reason}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InventoryError(f"{file}: cannot read the inventory: not a regular file")
        if info.st_size > MAX_CHARS:
            raise InventoryError(
                f"{file}: cannot read the inventory: {info.st_size} bytes (at most {MAX_CHARS})"
            )
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_CHARS:
            chunk = os.read(fd, MAX_CHARS + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise InventoryError(f"{file}: cannot read the inventory: {exc.strerror}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_CHARS:
        raise InventoryError(f"{file}: cannot read the inventory: more than {MAX_CHARS} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InventoryError(
            f"{file}:{line}:{column}: not UTF-8 text (byte 0x{data[exc.start]:02x})"
        ) from None


def read_inventory(path: str | os.PathLike[str]) -> Inventory:
    """Read and check the inventory file at ``path``, without asking a labgrid coordinator."""
    file = Path(path)
    return parse_inventory(_read_text(file), source=str(file), base=file.parent)


def load_inventory(path: str | os.PathLike[str]) -> Inventory:
    """Read and check the inventory file at ``path``; a labgrid section's places are asked of
    its coordinator."""
    inventory = read_inventory(path)
    if inventory.labgrid is not None:
        # The places a labgrid section selects are known only to its coordinator.
        from npu_hil.harness.farm.labgrid_boards import resolve_labgrid_boards

        inventory = resolve_labgrid_boards(inventory)
    return inventory
