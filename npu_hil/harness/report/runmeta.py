"""What a run was: harness version, commit, exit status, and its *run key* (a hash of the suite,
the inventory and the selection), so that "since the previous run" compares runs of one kind and
a ``-k`` debugging run never becomes a nightly's baseline (docs/farm/nightly.md)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from typing_extensions import TypedDict

if TYPE_CHECKING:
    from npu_hil.harness.farm.health_store import HealthDocument
    from npu_hil.harness.plugin.sim_faults import BoardFaultDocument

LAUNCHED_BY_ENV = "NPU_HIL_LAUNCHED_BY"
# pytest's exit codes of a run whose tests all ran: 0 all passed, 1 some failed
COMPLETE_EXITS = frozenset({0, 1})


Selected = str | int | bool | list[str] | None
"""An option of a run's selection (``-k``, ``--target``, ``--simfarm``...); unset ones are left
out of the run kind."""


class RunKind(TypedDict):
    """What makes two runs comparable (:func:`run_kind`), hashed into the run key; in summary.json's
    ``meta``."""

    suite: list[str]
    inventory: str
    inventory_sha256: str
    selection: dict[str, Selected]


class RunMeta(TypedDict, total=False):
    """summary.json's ``meta``: what the plugin (or ``npu-hil nightly``, rebuilding the report of a
    run that crashed) knows of the run; :func:`run_meta` gives the fields every run has."""

    run_id: str
    inventory: str
    backend: str | None
    targets: list[str]
    boards: list[str]
    started: str
    finished: str
    argv: list[str]
    python: str
    run_failure: str
    run_warnings: list[str]
    health_history: dict[str, HealthDocument]
    sim_faults: list[BoardFaultDocument]
    incomplete: bool
    harness_version: str
    git_commit: str
    command_line: str
    launched_by: str
    duration_s: float
    pytest_exit: int
    complete: bool
    run_kind: RunKind
    run_key: str
    compare_with: str


def harness_version() -> str:
    from npu_hil.harness import __version__

    return __version__


def git_commit(where: Path) -> str:
    """The commit checked out at ``where`` (with ``+dirty`` for local changes), or ""."""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        command = ["git", "-C", str(where), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=5, check=False)

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return ""
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return ""
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _file_digest(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return ""


def run_kind(
    suite: Sequence[str], inventory: Path | None, selection: Mapping[str, Selected]
) -> RunKind:
    return {
        "suite": sorted(suite),
        "inventory": str(inventory) if inventory is not None else "",
        "inventory_sha256": _file_digest(inventory),
        "selection": {k: v for k, v in sorted(selection.items()) if v not in (None, [], "", False)},
    }


def run_key(kind: RunKind) -> str:
    text = json.dumps(kind, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def run_meta(
    kind: RunKind,
    *,
    exitstatus: int,
    started: float,
    rootpath: Path,
    args: Sequence[str],
    compare_with: str = "",
    stopped: bool = False,
) -> RunMeta:
    """The fields a run's meta gets at its end: ``kind`` (:func:`run_kind`), pytest's exit
    status, when it started, the rootdir (for the commit), pytest's arguments; ``stopped``: the
    session ended before its last test (``-x``, ``--maxfail``, a stop request)."""
    return {
        "harness_version": harness_version(),
        "git_commit": git_commit(rootpath),
        "command_line": " ".join(["pytest", *args]),
        # npu-hil nightly names its own command line here: the one a reader would type again
        "launched_by": os.environ.get(LAUNCHED_BY_ENV, ""),
        "duration_s": round(time.time() - started, 3),
        "pytest_exit": exitstatus,
        "complete": exitstatus in COMPLETE_EXITS and not stopped,
        "run_kind": kind,
        "run_key": run_key(kind),
        "compare_with": compare_with,
    }
