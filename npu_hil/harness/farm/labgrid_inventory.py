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
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from npu_hil.harness.farm.inventory_entries import (
    NAME_RE,
    AdapterName,
    Defaults,
    Fallback,
    SerialLogin,
    SshLogin,
    Timeouts,
)
from npu_hil.harness.farm.inventory_reader import Entry, Located, problem
from npu_hil.harness.farm.inventory_types import (
    MAX_SECONDS,
    Seconds,
    Target,
    Text,
    Word,
    matching,
    number,
)
from npu_hil.harness.labgrid.config import LabgridConfig
from npu_hil.harness.transport.config import SerialConfig, SshConfig

__all__ = ["LabgridEntry", "LabgridPlaceEntry", "LabgridSection", "labgrid_section"]

Link = Literal["ssh", "serial"]
MAX_PRIO = 1e6
PlaceName = Annotated[Text, matching(NAME_RE, "a place name of [a-z0-9._-] characters")]
Wait = Annotated[float, number("a number in [0, 86400]", lambda n: 0 <= n <= MAX_SECONDS)]
"""Seconds to wait for a place someone holds; 0 refuses at once."""
Prio = Annotated[float, number("a number in [-1e+06, 1e+06]", lambda n: abs(n) <= MAX_PRIO)]


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


def labgrid_section(entry: LabgridEntry, defaults: Defaults, located: Located) -> LabgridSection:
    """The section, its places' positions kept for errors found when the coordinator is asked;
    the boards' adapter, python, workdir, fallback and timeouts from ``defaults``."""
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
        raise located.error(("labgrid",), str(exc)) from None
    places = ("labgrid", "places")
    return LabgridSection(
        config=config,
        entries=tuple(
            LabgridPlaceEntry(where=located.where((*places, i)), **e.model_dump())
            for i, e in enumerate(entry.places)
        ),
        where=located.where(("labgrid",)),
        prefer=entry.prefer,
        ssh=entry.ssh.config(),
        serial=entry.serial.config(),
        adapter=defaults.adapter,
        python=defaults.python,
        workdir=defaults.workdir,
        fallback=defaults.fallback,
        timeouts=defaults.timeouts,
    )
