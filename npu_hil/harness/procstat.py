"""One process's line of ``/proc/<pid>/stat`` (Linux): its state, parent, process group and the
start time that, with the pid, names one process for good (a pid alone can be reused).

Shared by the simulated farm (which stops only processes it started) and the labgrid ledger
(which releases only places whose holders are gone)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProcStat", "proc_stat"]


@dataclass(frozen=True)
class ProcStat:
    state: str
    ppid: int
    pgrp: int
    start_time: int  # clock ticks after boot

    @property
    def running(self) -> bool:
        """Not a zombie nor dead: a process that has ended but was not reaped counts as gone."""
        return self.state not in ("Z", "X")


def proc_stat(pid: int) -> ProcStat | None:
    """The process's stat, or None when it does not exist (or there is no /proc)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
    fields = raw[raw.rfind(")") + 2 :].split()
    try:
        return ProcStat(fields[0], int(fields[1]), int(fields[2]), int(fields[19]))
    except (IndexError, ValueError):
        return None
