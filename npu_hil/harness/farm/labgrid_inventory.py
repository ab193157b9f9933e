"""The inventory's ``labgrid:`` section: boards that are places of a labgrid coordinator.

The coordinator's address is written once; the places are named, selected by tags, or both::

    labgrid:
      coordinator: coordinator.farm.lan:20408
      places:                             # names, or mappings with per-place settings
        - rk3588-a
        - {place: kl730-b, target: kl730, adapter: kneron, workdir: /data/npu-hil}
      tags: {pool: npu}                   # and every place carrying all these tags
      wait: 600                           # seconds to wait for a place someone holds; 0 refuses
      refresh: 20                         # seconds between reservation refreshes
      prio: 0                             # priority of the reservations in labgrid's queue
      target_tag: target                  # the place tag naming the board's target
      prefer: ssh                         # ssh | serial: the link when a place has both
      ssh: {key_file: ~/.ssh/farm_ed25519, known_hosts: farm_known_hosts, host_key_policy: strict}
      serial: {user: root, password_env: FARM_CONSOLE_PASSWORD}

Each place becomes a board named after it (``hw``; adapter, python, workdir, timeouts and fallback
from ``defaults`` unless its mapping says otherwise). Where it is reached (SSH host and port, the
console's URL) and whether it has power control come from the place's resources, read when the
place is acquired. Parsing stays offline; the farm asks the coordinator which places there are
(:mod:`npu_hil.harness.farm.labgrid_boards`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from npu_hil.harness.farm.inventory_entries import (
    ADAPTER_RE,
    FALLBACKS,
    NAME_RE,
    Timeouts,
    read_config,
)
from npu_hil.harness.farm.inventory_reader import MappingNode, NodeReader, SequenceNode
from npu_hil.harness.labgrid.config import LabgridConfig
from npu_hil.harness.transport.config import SerialConfig, SshConfig

__all__ = ["LINKS", "LabgridPlaceEntry", "LabgridSection", "parse_labgrid_section"]

SECTION_KEYS = (
    "coordinator",
    "places",
    "tags",
    "wait",
    "refresh",
    "prio",
    "target_tag",
    "prefer",
    "ssh",
    "serial",
)
PLACE_KEYS = ("place", "target", "adapter", "python", "workdir", "fallback")
SSH_KEYS = ("user", "key_file", "known_hosts", "host_key_policy")
SERIAL_KEYS = ("user", "password_env")
LINKS = ("ssh", "serial")


@dataclass(frozen=True)
class LabgridPlaceEntry:
    """A place the inventory names, with the settings it gives it (None: the section's)."""

    place: str
    where: str  # ``file:line:column: labgrid.places[i]``, for errors found later
    target: str | None = None
    adapter: str | None = None
    python: str | None = None
    workdir: str | None = None
    fallback: str | None = None


@dataclass(frozen=True)
class LabgridSection:
    """The parsed section. ``ssh`` and ``serial`` are transports without an address (the place's
    resources give it); ``adapter`` None means the vendor's default for a real board."""

    config: LabgridConfig
    entries: tuple[LabgridPlaceEntry, ...]
    where: str
    prefer: str = "ssh"
    ssh: SshConfig = field(default_factory=SshConfig)
    serial: SerialConfig = field(default_factory=SerialConfig)
    adapter: str | None = None
    python: str | None = None
    workdir: str | None = None
    fallback: str = "none"
    timeouts: Timeouts = field(default_factory=Timeouts)

    def entry(self, place: str) -> LabgridPlaceEntry | None:
        return next((e for e in self.entries if e.place == place), None)


def _where(r: NodeReader, node: Any, path: str) -> str:
    mark = node.start_mark
    return f"{r.source}:{mark.line + 1}:{mark.column + 1}: {path}"


def _entry(
    r: NodeReader, node: Any, path: str, known_targets: tuple[str, ...]
) -> LabgridPlaceEntry:
    if not isinstance(node, MappingNode):
        name = r.pattern(node, path, NAME_RE, "a place name of [a-z0-9._-] characters")
        return LabgridPlaceEntry(place=name, where=_where(r, node, path))
    fields = r.mapping(node, path, PLACE_KEYS)
    if "place" not in fields:
        raise r.error(node, path, "expected a place (its name on the coordinator)")

    def text(key: str) -> str | None:
        return r.text(fields[key][1], f"{path}.{key}") if key in fields else None

    adapter = None
    if "adapter" in fields:
        adapter = r.pattern(fields["adapter"][1], f"{path}.adapter", ADAPTER_RE, "an adapter name")
    return LabgridPlaceEntry(
        place=r.pattern(
            fields["place"][1], f"{path}.place", NAME_RE, "a place name of [a-z0-9._-] characters"
        ),
        where=_where(r, node, path),
        target=r.choice(fields["target"][1], f"{path}.target", known_targets)
        if "target" in fields
        else None,
        adapter=adapter,
        python=text("python"),
        workdir=text("workdir"),
        fallback=r.choice(fields["fallback"][1], f"{path}.fallback", FALLBACKS)
        if "fallback" in fields
        else None,
    )


def _ssh(r: NodeReader, node: Any, path: str) -> SshConfig:
    return read_config(r, SshConfig, node, r.mapping(node, path, SSH_KEYS), path)


def _serial(r: NodeReader, node: Any, path: str) -> SerialConfig:
    return read_config(r, SerialConfig, node, r.mapping(node, path, SERIAL_KEYS), path)


MAX_WAIT = 24 * 3600.0
MAX_PRIO = 1e6


def _number(r: NodeReader, node: Any, path: str, *, low: float, high: float) -> float:
    """A finite plain number in [low, high] (``wait: 0`` refuses at once, ``prio`` may be
    negative); the reader refuses ``.inf``, base-60 ``1:30``, tags such as ``!-1``."""
    what = f"a number in [{low:g}, {high:g}]"
    number = float(r.number(node, path, what))
    if not low <= number <= high:
        raise r.expected(node, path, what)
    return number


def parse_labgrid_section(
    r: NodeReader, node: Any, defaults: Any, known_targets: tuple[str, ...]
) -> LabgridSection:
    """Check the ``labgrid`` section with the inventory's reader ``r`` (positions in errors)
    and its ``defaults`` (the boards' adapter, python, workdir, fallback and timeouts)."""
    path = "labgrid"
    fields = r.mapping(node, path, SECTION_KEYS)
    if "coordinator" not in fields:
        raise r.error(node, path, "expected a coordinator (HOST:PORT)")
    entries: list[LabgridPlaceEntry] = []
    if "places" in fields:
        places_node = fields["places"][1]
        if not isinstance(places_node, SequenceNode):
            raise r.expected(places_node, f"{path}.places", "a list of places")
        seen: set[str] = set()
        for index, item in enumerate(places_node.value):
            entry = _entry(r, item, f"{path}.places[{index}]", known_targets)
            if entry.place in seen:
                raise r.error(item, f"{path}.places[{index}]", f"{entry.place!r} listed twice")
            seen.add(entry.place)
            entries.append(entry)
    tags: dict[str, str] = {}
    if "tags" in fields:
        tags_node = fields["tags"][1]
        if not isinstance(tags_node, MappingNode):
            raise r.expected(tags_node, f"{path}.tags", "a mapping of tag: value")
        for key_node, value_node in tags_node.value:
            key = r.text(key_node, f"{path}.tags")
            if key in tags:
                raise r.error(key_node, f"{path}.tags.{key}", "duplicate key")
            tags[key] = r.word(value_node, f"{path}.tags.{key}")
    options: dict[str, Any] = {}
    if "wait" in fields:
        options["wait"] = _number(r, fields["wait"][1], f"{path}.wait", low=0, high=MAX_WAIT)
    if "refresh" in fields:
        options["refresh"] = float(r.seconds(fields["refresh"][1], f"{path}.refresh"))
    if "prio" in fields:
        options["prio"] = _number(
            r, fields["prio"][1], f"{path}.prio", low=-MAX_PRIO, high=MAX_PRIO
        )
    if "target_tag" in fields:
        options["target_tag"] = r.text(fields["target_tag"][1], f"{path}.target_tag")
    coordinator_node = fields["coordinator"][1]
    try:
        config = LabgridConfig(
            coordinator=r.text(coordinator_node, f"{path}.coordinator"),
            places=tuple(e.place for e in entries),
            tags=tags,
            **options,
        )
    except ValueError as exc:
        raise r.error(node, path, str(exc)) from None
    return LabgridSection(
        config=config,
        entries=tuple(entries),
        where=_where(r, node, path),
        prefer=r.choice(fields["prefer"][1], f"{path}.prefer", LINKS)
        if "prefer" in fields
        else "ssh",
        ssh=_ssh(r, fields["ssh"][1], f"{path}.ssh") if "ssh" in fields else SshConfig(),
        serial=_serial(r, fields["serial"][1], f"{path}.serial")
        if "serial" in fields
        else SerialConfig(),
        adapter=defaults.adapter,
        python=defaults.python,
        workdir=defaults.workdir,
        fallback=defaults.fallback,
        timeouts=defaults.timeouts,
    )
