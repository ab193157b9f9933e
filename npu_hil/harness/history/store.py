"""The history on disk (schemas: :mod:`npu_hil.harness.history.model`). Writes are atomic and the
index's update holds a lock beside it (two runs ending at once both land). Reads are bounded and
forgiving: a missing, torn, foreign or planted file is left out and named in
``History.problems``; a missing or unreadable index is rebuilt from the run folders."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from filelock import FileLock

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.history import DEFAULT_KEEP
from npu_hil.harness.history.model import (
    INDEX_FILE,
    MEASUREMENTS_FILE,
    SCHEMA_VERSION,
    CaseKey,
    CasePoint,
    LatencyFigures,
    RunEntry,
    WorstAccuracy,
)
from npu_hil.harness.report.atomic import write_text_atomic
from npu_hil.harness.report.runs import RUN_ID_PATTERN, past_document, root_problem
from npu_hil.harness.report.sanitize import clean_json

LOCK_FILE = "." + INDEX_FILE + ".lock"  # hidden: a listing of the reports root shows runs
LOCK_TIMEOUT_S = 30.0


@dataclass
class History:
    """Runs of one kind (or of every kind), oldest first, and each case's points in them."""

    runs: list[RunEntry] = field(default_factory=list)
    points: dict[CaseKey, list[CasePoint]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # damaged files left out, each named

    def series(self, key: CaseKey) -> list[CasePoint]:
        """The case's points, oldest first (a run it was not in has no point)."""
        return self.points.get(key, [])


def write_measurements(run_dir: Path, entry: RunEntry, points: Iterable[CasePoint]) -> Path:
    """``<run_dir>/measurements.json`` for the run ``entry`` describes."""
    cases = [point.to_dict() for point in points]
    # The file's "cases" is the list itself; the index's count is its length.
    doc = {"schema": SCHEMA_VERSION, **entry.to_dict(), "cases": cases}
    path = Path(run_dir) / MEASUREMENTS_FILE
    write_text_atomic(path, clean_json(doc, sort_keys=True, separators=(",", ":")))
    return path


def _entry(data: Any) -> RunEntry | None:
    if not isinstance(data, dict):
        return None
    try:
        run_id = str(data["run_id"])
        if not RUN_ID_PATTERN.match(run_id):
            return None
        counts = data.get("counts") or {}
        return RunEntry(
            run_id=run_id,
            run_key=str(data.get("run_key", "")),
            started=float(data.get("started", 0.0)),
            complete=bool(data.get("complete", False)),
            counts={str(k): int(v) for k, v in counts.items()},
            cases=int(data.get("cases", 0)),
        )
    except (KeyError, TypeError, ValueError):
        return None


class HistoryLockError(NpuHilError):
    """The index's lock file is not a regular file of this user's own (a planted symlink would
    make the lock truncate whatever it points at), or the reports folder is not trusted."""


def read_measurements(
    run_dir: Path, problems: list[str] | None = None
) -> tuple[RunEntry, list[CasePoint]] | None:
    """A run's entry and points, or None when it has no readable measurements.json (damage
    named in ``problems``)."""
    path = Path(run_dir) / MEASUREMENTS_FILE
    doc = past_document(path, "a run's measurements", problems=problems)
    if doc is None or doc.get("schema") != SCHEMA_VERSION:
        return None
    cases = doc.get("cases")
    if not isinstance(cases, list):
        return None
    entry = _entry({**doc, "cases": len(cases)})
    if entry is None:
        return None
    points = []
    run_id = entry.run_id
    for case in cases:
        # one lookup per field and no intermediate dict: a history's load builds a million
        if not isinstance(case, dict) or not isinstance(nodeid := case.get("nodeid"), str):
            continue
        latency = case.get("latency")
        accuracy = case.get("accuracy")
        points.append(
            CasePoint(
                run_id,
                nodeid,
                str(case.get("board") or ""),
                str(case.get("target") or ""),
                str(case.get("outcome") or ""),
                str(case.get("ran_on") or ""),
                # the figures are read through flaky.numeric, which takes any value
                cast(LatencyFigures, latency) if isinstance(latency, dict) else None,
                cast(WorstAccuracy, accuracy) if isinstance(accuracy, dict) else None,
                str(case.get("noisy") or ""),
                str(case.get("subject") or ""),
            )
        )
    return entry, points


def _scan(root: Path, problems: list[str] | None, skip: str = "") -> list[RunEntry]:
    """The index rebuilt from the run folders (oldest first), run ``skip`` left out."""
    entries = []
    for run_dir in sorted(p for p in root.iterdir() if RUN_ID_PATTERN.match(p.name)):
        if run_dir.name == skip:
            continue
        found = read_measurements(run_dir, problems)
        if found is not None:
            entries.append(found[0])
    return entries


def read_index(
    reports_root: Path, problems: list[str] | None = None, *, skip: str = ""
) -> list[RunEntry]:
    """The indexed runs, oldest first; rebuilt from the run folders when the index is missing
    or unreadable (an empty list for a root that does not exist), where the run ``skip`` (one
    whose entry the caller holds) is not read."""
    root = Path(reports_root)
    if not root.is_dir():
        return []
    doc = past_document(root / INDEX_FILE, "the history index", problems=problems)
    runs = doc.get("runs") if doc is not None and doc.get("schema") == SCHEMA_VERSION else None
    if not isinstance(runs, list):
        return _scan(root, problems, skip)
    return [entry for entry in map(_entry, runs) if entry is not None]


def _lock_path(root: Path) -> Path:
    """The index's lock file, checked first: filelock opens it with O_TRUNC and follows a
    symlink, so a symlink planted there by someone else would empty a file of ours."""
    path = root / LOCK_FILE
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return path
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a regular file"
        if stat.S_ISREG(info.st_mode):
            kind = f"owned by uid {info.st_uid}"
        raise HistoryLockError(
            f"{path}: expected the history's lock file (a regular file of uid {os.geteuid()}), "
            f"got {kind}; the run is not indexed until it is removed"
        )
    return path


def update_index(reports_root: Path, entry: RunEntry, keep: int = DEFAULT_KEEP) -> list[RunEntry]:
    """Add (or replace) ``entry`` in the index, keep the newest ``keep`` runs, and return them.
    Run folders that leave the index stay on disk: the index decides what the history reads."""
    if keep < 1:
        raise ValueError(f"history keep must be at least 1, got {keep}")
    root = Path(reports_root)
    problem = root_problem(root)
    if problem is not None:
        raise HistoryLockError(f"{problem}; the run is not indexed")
    with FileLock(str(_lock_path(root)), timeout=LOCK_TIMEOUT_S):
        runs = {e.run_id: e for e in read_index(root, skip=entry.run_id)}
        runs[entry.run_id] = entry
        kept = sorted(runs.values(), key=lambda e: e.run_id)[-keep:]
        # A run a line, each dumped alone: json.dumps(..., indent=...) takes the pure-Python
        # encoder, which made a 1,000-run index take a tenth of a second to write.
        lines = ",\n".join(json.dumps(e.to_dict(), sort_keys=True) for e in kept)
        text = f'{{"keep": {keep}, "runs": [\n{lines}\n], "schema": {SCHEMA_VERSION}}}\n'
        write_text_atomic(root / INDEX_FILE, text)
    return kept


def load_history(
    reports_root: Path,
    run_key: str | None = None,
    *,
    limit: int = DEFAULT_KEEP,
    complete_only: bool = True,
    before: str | None = None,
) -> History:
    """The newest ``limit`` indexed runs (of ``run_key`` when given; complete ones only unless
    told otherwise; started before run id ``before`` when given) with their points."""
    history = History()
    problem = root_problem(reports_root)
    if problem is not None:
        history.problems.append(f"{problem}; earlier runs not read (no baselines)")
        return history
    matching = [
        e
        for e in read_index(Path(reports_root), history.problems)
        if (run_key is None or e.run_key == run_key)
        and (e.complete or not complete_only)
        and (before is None or e.run_id < before)
    ]
    chosen: Sequence[RunEntry] = matching[-limit:] if limit > 0 else []
    for entry in chosen:
        found = read_measurements(Path(reports_root) / entry.run_id, history.problems)
        if found is None:
            continue
        history.runs.append(found[0])
        for point in found[1]:
            history.points.setdefault(point.key, []).append(point)
    return history
