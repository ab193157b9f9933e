"""The ledger of ``--simfarm`` runs: which farm folders are in use, and by which process.

A ``--simfarm`` run starts an sshd (root login by key on 127.0.0.1, when run as root) and
serial consoles, and stops them when it ends, however it ends, except by SIGKILL or a power
cut: then they would run, and their folder of keys stay, forever. So each run writes its farm
folder down, with its own pid and start time (a reused pid is not mistaken for it), in a file
of this user's own (the farm's default workdir), and every later run stops and removes the farms
of runs that are gone. A recorded process is only ever signalled by
:func:`npu_hil_testkit.simfarm.down`, which checks its start time and command line first; a folder
is only removed when it is still a real folder of this user's named like one the run made (never
through a link).

One JSON file, changed only under a file lock and replaced atomically (as
:mod:`npu_hil.harness.labgrid.ledger` does for labgrid places).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import cast

from filelock import FileLock
from typing_extensions import NotRequired, TypedDict

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.labgrid.ledger import Holder, current_holder, holder_alive

__all__ = ["FOLDER_PREFIX", "SimFarmLedger"]

log = logging.getLogger(__name__)

VERSION = 1
FOLDER_PREFIX = "npu-hil-simfarm-"
LOCK_TIMEOUT_S = 60.0


class FarmRun(TypedDict):
    """A run's farm in ``simfarm-runs.json``: its folder and the process (and host) that runs it."""

    folder: str
    pid: int
    start: int | None
    host: NotRequired[str]


class SimFarmLedger:
    """The ledger file ``simfarm-runs.json`` in ``folder`` (a folder of this user's own)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "simfarm-runs.json"
        self.host = socket.gethostname()
        self._lock = FileLock(f"{self.path}.lock", timeout=LOCK_TIMEOUT_S)

    def _load(self) -> list[FarmRun]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("simfarm ledger %s unreadable (%s); starting a new one", self.path, exc)
            return []
        if not isinstance(data, dict) or data.get("version") != VERSION:
            return []
        runs = data.get("runs")
        if not isinstance(runs, list):
            return []
        return [
            cast(FarmRun, r)
            for r in runs
            if isinstance(r, dict)
            and isinstance(r.get("folder"), str)
            and isinstance(r.get("pid"), int)
            and (r.get("start") is None or isinstance(r.get("start"), int))
            and isinstance(r.get("host", ""), str)
        ]

    def _save(self, runs: list[FarmRun]) -> None:
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        text = json.dumps({"version": VERSION, "runs": runs}, indent=1, sort_keys=True)
        tmp.write_text(text + "\n", encoding="utf-8")
        os.replace(tmp, self.path)

    @contextlib.contextmanager
    def _runs(self) -> Iterator[list[FarmRun]]:
        with self._lock:
            runs = self._load()
            yield runs
            self._save(runs)

    def add(self, folder: Path) -> None:
        """Record ``folder`` as this process's farm (before anything is started in it)."""
        me = current_holder()
        with self._runs() as runs:
            runs.append(
                {"folder": str(folder), "pid": me.pid, "start": me.start, "host": self.host}
            )

    def remove(self, folder: Path) -> None:
        """Forget ``folder`` (its run stopped its farm itself)."""
        with self._runs() as runs:
            runs[:] = [r for r in runs if r["folder"] != str(folder)]

    def reap(self) -> list[Path]:
        """Stop and remove the farms of runs that are gone (recorded on this host); the folders
        cleaned. A farm that cannot be stopped stays recorded, for the next run to try."""
        from npu_hil_testkit.simfarm.farm import down

        cleaned: list[Path] = []
        with self._runs() as runs:
            kept: list[FarmRun] = []
            for run in runs:
                holder = Holder(int(run["pid"]), run.get("start"))
                if run.get("host") != self.host or holder_alive(holder):
                    kept.append(run)
                    continue
                folder = Path(run["folder"])
                if not _ours(folder):
                    continue  # gone, or no longer a folder of ours: nothing of ours to stop
                try:
                    down(folder)
                    shutil.rmtree(folder)
                except (NpuHilError, OSError) as exc:
                    log.warning("simfarm of the ended run %d in %s: %s", holder.pid, folder, exc)
                    kept.append(run)
                    continue
                log.warning(
                    "stopped the simulated farm of run %d, which ended without stopping it (%s)",
                    holder.pid,
                    folder,
                )
                cleaned.append(folder)
            runs[:] = kept
        return cleaned


def _ours(folder: Path) -> bool:
    """Whether ``folder`` is still a farm folder of this user's: a real folder (not a link),
    owned by us, named as the runs name theirs. Missing: nothing to clean."""
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.geteuid()
        and folder.name.startswith(FOLDER_PREFIX)
    )
