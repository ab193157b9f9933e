"""The board inventory (``inventory.yaml``): what each board *is*, as plain data.

Parsed as composed nodes (:mod:`npu_hil.harness.yaml_reader`) so every node keeps its position,
and checked once by pydantic models (:class:`InventoryFile` and the ones it holds): an error
names the file, line and column, the key path, what was expected and what came, e.g.
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
        adapter_options: {library: /opt/rknpu2/librknnrt.so}   # to every job of the board
        runtimes:                         # runtime versions installed side by side, each as
          "1.6.0": {library: /opt/rknpu2-1.6.0/librknnrt.so}   # the options that pick it
          "2.3.2": {library: /opt/rknpu2-2.3.2/librknnrt.so}   # (--runtime, --runtime-matrix)
    labgrid: {coordinator: HOST:PORT, places: [...], tags: {...}, wait: 600, ...}
                                          # places of a labgrid coordinator as boards
                                          # (npu_hil.harness.farm.labgrid_inventory); ``boards`` may
                                          # then be left out. Reading stays offline: the farm
                                          # asks the coordinator for the places
                                          # (npu_hil.harness.farm.labgrid_boards)

Numbers are plain decimals (:mod:`npu_hil.harness.yaml_reader` refuses YAML 1.1's base 60, octal and
hex forms, ``.inf`` and tags); text fields hold no control characters or lone surrogates.

``transport: local`` is short for ``{kind: local}``. A board's ``transport`` replaces the default
one as a whole (mixing an SSH host with serial settings would be meaningless); ``timeouts`` merge
key by key.

The modules, in the one direction data flows: :mod:`npu_hil.harness.yaml_reader` (text to nodes
to plain data), :mod:`~npu_hil.harness.farm.inventory_reader` (a model's errors back at their
nodes), :mod:`~npu_hil.harness.farm.inventory_types` (the fields' types),
:mod:`~npu_hil.harness.farm.inventory_secrets`, :mod:`~npu_hil.harness.farm.inventory_entries`
(transport, timeouts, power), :mod:`~npu_hil.harness.farm.labgrid_inventory` (the ``labgrid:``
section), this one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, model_validator

from npu_hil.harness.farm.backends import BoardBackend
from npu_hil.harness.farm.inventory_entries import (
    NAME_RE,
    AdapterName,
    Defaults,
    Fallback,
    Power,
    PowerConfig,
    Timeouts,
    Transport,
)
from npu_hil.harness.farm.inventory_options import Options, Runtimes
from npu_hil.harness.farm.inventory_reader import Entry, InventoryError, problem, validate
from npu_hil.harness.farm.inventory_secrets import refuse_secret_text, secret_check
from npu_hil.harness.farm.inventory_types import FilePath, Target, Text, matching
from npu_hil.harness.farm.labgrid_inventory import LabgridEntry, LabgridSection, labgrid_section
from npu_hil.harness.files import InputFileError, read_regular
from npu_hil.harness.transport.config import LocalConfig, TransportConfig
from npu_hil.harness.yaml_reader import MAX_CHARS, YamlProblem, compose
from npu_hil.targets.registry import HW_ADAPTERS as HW_ADAPTERS  # re-exported
from npu_hil.targets.registry import VENDOR_OF as VENDOR_OF  # re-exported

__all__ = [
    "NAME_RE",
    "Board",
    "Inventory",
    "InventoryError",
    "PowerConfig",
    "Timeouts",
    "TransportConfig",
    "load_inventory",
    "parse_inventory",
]

# VENDOR_OF (target → vendor) and HW_ADAPTERS (vendor → the runtime adapter a real board uses
# unless the inventory names another) are the vendor units' (npu_hil.targets.registry).
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
    """Options for every job of the board (:mod:`npu_hil.harness.farm.inventory_options`)."""
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
