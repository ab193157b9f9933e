"""The board inventory (``inventory.yaml``): what each board *is*, checked once by the pydantic
models here, each error at its ``file:line:column: key.path``. Reading stays offline (the farm
asks a labgrid coordinator for its places). The schema: docs/farm/inventory.md and
docs/farm/labgrid.md; every key: the generated "Inventory keys" reference page.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from npu_hil.harness.farm.defaults import BoardBackend
from npu_hil.harness.farm.inventory_reader import (
    KIND,
    Entry,
    InventoryError,
    Located,
    expected,
    problem,
    refuse_secret_text,
    secret_check,
    validate,
)
from npu_hil.harness.farm.inventory_types import (
    MAX_SECONDS,
    Baudrate,
    Command,
    FilePath,
    LocalPath,
    Options,
    PasswordEnv,
    Port,
    Runtimes,
    Seconds,
    Target,
    Text,
    Word,
    matching,
    number,
)
from npu_hil.harness.files import InputFileError, read_regular
from npu_hil.harness.labgrid.config import LabgridConfig
from npu_hil.harness.transport.config import (
    CONFIGS,
    KINDS,
    LocalConfig,
    SerialConfig,
    SshConfig,
    TransportConfig,
)
from npu_hil.harness.transport.defaults import HostKeyPolicy
from npu_hil.harness.yaml_reader import MAX_CHARS, YamlProblem, compose
from npu_hil.targets.registry import HW_ADAPTERS, VENDOR_OF

__all__ = [
    "NAME_RE",
    "Board",
    "Inventory",
    "InventoryError",
    "LabgridSection",
    "PowerConfig",
    "Timeouts",
    "TransportConfig",
    "load_inventory",
    "parse_inventory",
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
        raise problem(f"expected {{kind: {value}, {address}: ...}}, got {value!r}")
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


Link = Literal["ssh", "serial"]
MAX_PRIO = 1e6
PlaceName = Annotated[Text, matching(NAME_RE, "a place name of [a-z0-9._-] characters")]
Wait = Annotated[float, number("a number in [0, 86400]", lambda n: 0 <= n <= MAX_SECONDS)]
"""Seconds to wait for a place someone holds; 0 refuses at once."""
Prio = Annotated[float, number("a number in [-1e+06, 1e+06]", lambda n: abs(n) <= MAX_PRIO)]


class PlaceEntry(Entry):
    """A place of ``places``: its name, or a mapping with its own settings."""

    place: PlaceName = Field(description="a place (its name on the coordinator)")
    target: Target | None = None
    adapter: AdapterName | None = None
    python: Text | None = None
    workdir: Text | None = None
    fallback: Fallback | None = None

    @model_validator(mode="before")
    @classmethod
    def _named(cls, data: Any) -> Any:
        return data if isinstance(data, dict) else {"place": data}


class LabgridEntry(Entry):
    """The section as written (:func:`labgrid_section` makes it a :class:`LabgridSection`)."""

    coordinator: Text = Field(description="a coordinator (HOST:PORT)")
    places: list[PlaceEntry] = Field([], description="a list of places")
    tags: dict[Text, Word] = Field({}, description="a mapping of tag: value")
    wait: Wait | None = None
    refresh: Seconds | None = None
    prio: Prio | None = None
    target_tag: Text | None = None
    prefer: Link = "ssh"
    ssh: SshLogin = SshLogin()
    serial: SerialLogin = SerialLogin()

    @model_validator(mode="after")
    def _once(self) -> LabgridEntry:
        names = [entry.place for entry in self.places]
        for index, name in enumerate(names):
            if name in names[:index]:
                raise problem(f"{name!r} listed twice", at=("places", index))
        return self


@dataclass(frozen=True)
class LabgridSection:
    """The parsed section. ``entries``: the places the inventory names, with the settings they
    give (None: the section's), and ``at`` where each is (``file:line:column:
    labgrid.places[i]``, for errors found later). ``ssh`` and ``serial`` are transports without
    an address (the place's resources give it); the boards' adapter (None: the vendor's default
    for a real board), python, workdir, fallback and timeouts are ``defaults``' unless a place's
    entry says."""

    config: LabgridConfig
    entries: Mapping[str, PlaceEntry]
    at: Mapping[str, str]
    where: str
    prefer: str = "ssh"
    ssh: SshConfig = field(default_factory=SshConfig)
    serial: SerialConfig = field(default_factory=SerialConfig)
    defaults: Defaults = field(default_factory=Defaults)


def labgrid_section(entry: LabgridEntry, defaults: Defaults, located: Located) -> LabgridSection:
    """The section, its places' positions kept for errors found when the coordinator is asked."""
    options = entry.model_dump(
        include={"wait", "refresh", "prio", "target_tag"}, exclude_unset=True
    )
    try:
        config = LabgridConfig(
            coordinator=entry.coordinator,
            places=tuple(e.place for e in entry.places),
            tags=entry.tags,
            **options,
        )
    except ValueError as exc:
        raise InventoryError(f"{located.where(('labgrid',))}: {exc}") from None
    return LabgridSection(
        config=config,
        entries={e.place: e for e in entry.places},
        at={e.place: located.where(("labgrid", "places", i)) for i, e in enumerate(entry.places)},
        where=located.where(("labgrid",)),
        prefer=entry.prefer,
        ssh=entry.ssh.config(),
        serial=entry.serial.config(),
        defaults=defaults,
    )


SIM_ADAPTER = "sim"


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
    adapter_options: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """Options for every job of the board (:mod:`npu_hil.harness.farm.inventory_types`)."""
    runtimes: Mapping[str, Mapping[str, Any]] = field(
        default_factory=dict, hash=False, compare=False
    )
    """Runtime name → the adapter options that pick that runtime on the board."""

    def options_for(self, runtime: str | None) -> dict[str, Any]:
        """The adapter options of a job under ``runtime`` (None: the board's default)."""
        if runtime is None:
            return dict(self.adapter_options)
        if runtime not in self.runtimes:
            have = ", ".join(self.runtimes) or "none"
            raise InventoryError(f"{self.name}: no runtime {runtime!r} (the board has: {have})")
        return {**self.adapter_options, **self.runtimes[runtime]}

    @property
    def vendor(self) -> str:
        """The name of the target's vendor unit (``npu_hil.targets.registry``)."""
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
    places_listed: bool = False
    """Whether the boards of the labgrid section's places are in ``boards`` already (the farm
    asked the coordinator: :func:`npu_hil.harness.farm.labgrid_boards.resolve_labgrid_boards`)."""

    def board(self, name: str) -> Board:
        for board in self.boards:
            if board.name == name:
                return board
        known = ", ".join(b.name for b in self.boards) or "none"
        raise InventoryError(f"{self.source}: no board {name!r} (boards: {known})")


class BoardEntry(Entry):
    """A board of ``boards`` as written."""

    name: Annotated[Text, matching(NAME_RE, "a name of [a-z0-9._-] characters")]
    target: Target
    backend: BoardBackend | None = None
    transport: Transport | None = None
    fallback: Fallback | None = None
    tags: tuple[Text, ...] = Field((), description="a list of strings")
    adapter: AdapterName | None = None
    python: Text | None = None
    workdir: Text | None = None
    power: Power | None = None
    timeouts: Timeouts | None = None
    adapter_options: Options = Field(default_factory=dict)
    runtimes: Runtimes = Field(default_factory=dict)

    def board(self, defaults: Defaults) -> Board:
        """The board, with ``defaults`` where the entry says nothing."""
        transport = self.transport or defaults.transport
        config = transport.config() if transport else LocalConfig()
        # Without a word from the file, a board on the local transport is a simulated one.
        backend = self.backend or defaults.backend or ("sim" if config.kind == "local" else "hw")
        # defaults.adapter is for real boards: a simulated board always runs the sim adapter.
        adapter = self.adapter or (
            SIM_ADAPTER
            if backend == "sim"
            else defaults.adapter or HW_ADAPTERS[VENDOR_OF[self.target]]
        )
        return Board(
            name=self.name,
            target=self.target,
            backend=backend,
            transport=config,
            fallback=self.fallback or defaults.fallback,
            adapter=adapter,
            tags=self.tags,
            python=self.python or defaults.python,
            workdir=self.workdir or defaults.workdir,
            power=self.power.config() if self.power else None,
            timeouts=self.timeouts.over(defaults.timeouts) if self.timeouts else defaults.timeouts,
            adapter_options=self.adapter_options,
            runtimes=self.runtimes,
        )


class InventoryFile(Entry):
    """The file as written."""

    defaults: Defaults = Defaults()
    boards: list[BoardEntry] = Field([], description="a list of boards")
    manifest: FilePath | None = None
    labgrid: LabgridEntry | None = None

    @model_validator(mode="after")
    def _boards(self) -> InventoryFile:
        if "boards" not in self.model_fields_set and self.labgrid is None:
            raise problem("expected a list of boards (or a labgrid section)")
        names = [board.name for board in self.boards]
        for index, name in enumerate(names):
            if name in names[:index]:
                also = f"also boards[{names.index(name)}]"
                raise problem(
                    f"duplicate board name {name!r} ({also})", at=("boards", index, "name")
                )
        return self


def parse_inventory(
    text: str, *, source: str = "<inventory>", base: str | os.PathLike[str] = "."
) -> Inventory:
    """Check inventory YAML ``text``; ``base`` is the folder relative paths start from."""
    try:
        root = compose(text)
    except YamlProblem as problem:
        refuse_secret_text(source, text)
        raise InventoryError(
            f"{source}:{problem.line}:{problem.column}: {problem.message}"
        ) from None
    if root is None:
        raise InventoryError(f"{source}:1:1: expected a mapping with boards, got an empty file")
    check = secret_check(source)
    file, located = validate(InventoryFile, root, source, context=Path(base), check=check)
    return Inventory(
        boards=tuple(entry.board(file.defaults) for entry in file.boards),
        manifest=Path(file.manifest) if file.manifest else None,
        source=source,
        labgrid=labgrid_section(file.labgrid, file.defaults, located) if file.labgrid else None,
    )


def load_inventory(path: str | os.PathLike[str]) -> Inventory:
    """Read and check the inventory file at ``path``, offline: a labgrid section's places are
    not asked for here, the farm asks its coordinator
    (:func:`npu_hil.harness.farm.labgrid_boards.resolve_labgrid_boards`)."""
    file = Path(path)
    try:
        # A regular file of at most the YAML reader's bound: a FIFO is refused, not waited on,
        # and /dev/zero is not read forever.
        data = bytes(read_regular(file, "an inventory file", MAX_CHARS))
    except InputFileError as exc:
        raise InventoryError(exc.message) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        byte = f"byte 0x{data[exc.start]:02x}"
        raise InventoryError(f"{file}:{line}:{column}: not UTF-8 text ({byte})") from None
    return parse_inventory(text, source=str(file), base=file.parent)
