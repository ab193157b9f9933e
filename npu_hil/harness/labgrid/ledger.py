"""The ledger: which places the processes of this host hold on a coordinator, and for whom (pid
and start time, so a reused pid is not taken for the holder). An acquired place has no lease, so
the next process releases the places whose holders are all dead; pytest-xdist workers of one host
share a place through it (docs/farm/labgrid.md, "What happens to the places").
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from filelock import FileLock

from npu_hil.harness.procstat import proc_stat

log = logging.getLogger(__name__)

VERSION = 1
LOCK_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Holder:
    """A process, told apart from a later one with the same pid by its start time."""

    pid: int
    start: int | None


@dataclass
class Holding:
    """A place acquired from this host: under which labgrid identity (``host/user``), with which
    reservation, and the processes using it."""

    place: str
    owner: str
    token: str | None
    host: str
    holders: list[Holder] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: object) -> Holding:
        """A ledger entry read back; KeyError, TypeError or ValueError when it is not one."""
        if not isinstance(data, dict):
            raise TypeError(f"a ledger entry is an object, not {type(data).__name__}")
        return cls(
            place=str(data["place"]),
            owner=str(data["owner"]),
            token=data.get("token"),
            host=str(data["host"]),
            holders=[Holder(int(h["pid"]), h.get("start")) for h in data.get("holders", [])],
        )


def current_holder() -> Holder:
    pid = os.getpid()
    stat = proc_stat(pid)  # its start time in clock ticks since boot, where /proc has one
    return Holder(pid, None if stat is None else stat.start_time)


def holder_alive(holder: Holder) -> bool:
    """Whether the recorded process still runs (a zombie counts as gone)."""
    if Path("/proc").is_dir():
        stat = proc_stat(holder.pid)
        if stat is None or not stat.running:
            return False
        return holder.start is None or stat.start_time == holder.start
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class PlaceLedger:
    """The ledger file for one coordinator in ``folder``."""

    def __init__(self, folder: Path, coordinator: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9.-]+", "_", coordinator).strip("_") or "coordinator"
        self.path = folder / f"places-{name}.json"
        self.coordinator = coordinator
        self.host = socket.gethostname()
        self._lock = FileLock(str(self.path) + ".lock", timeout=LOCK_TIMEOUT_S)

    def _load(self) -> dict[str, Holding]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            # A torn or foreign file must not stop a run; what it held is reported and dropped.
            log.warning("labgrid ledger %s unreadable (%s); starting a new one", self.path, exc)
            return {}
        if not isinstance(data, dict) or data.get("version") != VERSION:
            log.warning("labgrid ledger %s has an unknown format; starting a new one", self.path)
            return {}
        holdings: dict[str, Holding] = {}
        for name, entry in dict(data.get("places", {})).items():
            try:
                holdings[str(name)] = Holding.from_dict(entry)
            except (KeyError, TypeError, ValueError):
                log.warning("labgrid ledger %s: dropping a malformed entry %r", self.path, name)
        return holdings

    def save(self, holdings: dict[str, Holding]) -> None:
        """Write the holdings now: inside a transaction, before a step a kill could cut short."""
        data = {
            "version": VERSION,
            "coordinator": self.coordinator,
            "places": {name: asdict(h) for name, h in sorted(holdings.items())},
        }
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[dict[str, Holding]]:
        """The holdings (place name → record), under the lock; saved when the block ends
        normally, left as they were when it raises."""
        with self._lock:
            holdings = self._load()
            yield holdings
            self.save(holdings)

    def prune(self, holding: Holding) -> list[Holder]:
        """Drop the dead holders of a holding recorded on this host; return those left. A holding
        recorded on another host (a workdir on a shared file system) is left alone: its pids mean
        nothing here."""
        if holding.host != self.host:
            return holding.holders
        holding.holders = [h for h in holding.holders if holder_alive(h)]
        return holding.holders
