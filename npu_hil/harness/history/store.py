"""The history on disk: one run's ``measurements.json`` and the reports root's ``history.json``
index (schemas in :mod:`npu_hil.harness.history.model`).

Writes are atomic (a reader sees the old file or the new one) and the index's
read-modify-write holds a lock beside it, so two runs ending at once on one reports root both
land. Reads are forgiving the way a report reader must be: a run whose file is missing, torn or
of another schema is left out of the history, never fatal; the index is only a list of run ids
and is rebuilt from the run folders when it is missing or unreadable.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from npu_hil.harness.history.defaults import DEFAULT_KEEP
from npu_hil.harness.history.model import (
    INDEX_FILE,
    MEASUREMENTS_FILE,
    SCHEMA_VERSION,
    CaseKey,
    CasePoint,
    RunEntry,
)
from npu_hil.harness.report.atomic import write_text_atomic
from npu_hil.harness.report.runs import RUN_ID_PATTERN
from npu_hil.harness.report.sanitize import clean_value

__all__ = [
    "DEFAULT_KEEP",
    "History",
    "load_history",
    "read_index",
    "read_measurements",
    "update_index",
    "write_measurements",
]

LOCK_FILE = "." + INDEX_FILE + ".lock"  # hidden: a listing of the reports root shows runs
LOCK_TIMEOUT_S = 30.0


@dataclass
class History:
    """Runs of one kind (or of every kind), oldest first, and each case's points in them."""

    runs: list[RunEntry] = field(default_factory=list)
    points: dict[CaseKey, list[CasePoint]] = field(default_factory=dict)

    def series(self, key: CaseKey) -> list[CasePoint]:
        """The case's points, oldest first (a run it was not in has no point)."""
        return self.points.get(key, [])


def write_measurements(run_dir: Path, entry: RunEntry, points: Iterable[CasePoint]) -> Path:
    """``<run_dir>/measurements.json`` for the run ``entry`` describes."""
    cases = [point.to_dict() for point in points]
    # The file's "cases" is the list itself; the index's count is its length.
    doc = {"schema": SCHEMA_VERSION, **entry.to_dict(), "cases": cases}
    path = Path(run_dir) / MEASUREMENTS_FILE
    write_text_atomic(path, json.dumps(clean_value(doc), sort_keys=True, separators=(",", ":")))
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


def read_measurements(run_dir: Path) -> tuple[RunEntry, list[CasePoint]] | None:
    """A run's entry and points, or None when it has no readable measurements.json."""
    try:
        doc = json.loads((Path(run_dir) / MEASUREMENTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA_VERSION:
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
        if not isinstance(case, dict):
            continue
        nodeid = case.get("nodeid")
        if not isinstance(nodeid, str):
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
                latency if isinstance(latency, dict) else None,
                accuracy if isinstance(accuracy, dict) else None,
                str(case.get("noisy") or ""),
            )
        )
    return entry, points


def _scan(root: Path) -> list[RunEntry]:
    """The index rebuilt from the run folders (oldest first)."""
    entries = []
    for run_dir in sorted(p for p in root.iterdir() if RUN_ID_PATTERN.match(p.name)):
        found = read_measurements(run_dir)
        if found is not None:
            entries.append(found[0])
    return entries


def read_index(reports_root: Path) -> list[RunEntry]:
    """The indexed runs, oldest first; rebuilt from the run folders when the index is missing
    or unreadable (an empty list for a root that does not exist)."""
    root = Path(reports_root)
    if not root.is_dir():
        return []
    try:
        doc = json.loads((root / INDEX_FILE).read_text(encoding="utf-8"))
        ours = isinstance(doc, dict) and doc.get("schema") == SCHEMA_VERSION
        runs = doc["runs"] if ours else None
    except (OSError, ValueError, KeyError):
        runs = None
    if not isinstance(runs, list):
        return _scan(root)
    return [entry for entry in map(_entry, runs) if entry is not None]


def _index_text(keep: int, runs: Sequence[RunEntry]) -> str:
    """The index, a run a line. Each line is dumped alone: ``json.dumps(..., indent=...)`` takes
    the pure-Python encoder, which made a 1,000-run index take a tenth of a second to write."""
    lines = ",\n".join(json.dumps(e.to_dict(), sort_keys=True) for e in runs)
    return f'{{"keep": {keep}, "runs": [\n{lines}\n], "schema": {SCHEMA_VERSION}}}\n'


def update_index(reports_root: Path, entry: RunEntry, keep: int = DEFAULT_KEEP) -> list[RunEntry]:
    """Add (or replace) ``entry`` in the index, keep the newest ``keep`` runs, and return them.
    Run folders that leave the index stay on disk: the index decides what the history reads."""
    if keep < 1:
        raise ValueError(f"history keep must be at least 1, got {keep}")
    root = Path(reports_root)
    with FileLock(str(root / LOCK_FILE), timeout=LOCK_TIMEOUT_S):
        runs = {e.run_id: e for e in read_index(root)}
        runs[entry.run_id] = entry
        kept = sorted(runs.values(), key=lambda e: e.run_id)[-keep:]
        write_text_atomic(root / INDEX_FILE, _index_text(keep, kept))
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
    matching = [
        e
        for e in read_index(Path(reports_root))
        if (run_key is None or e.run_key == run_key)
        and (e.complete or not complete_only)
        and (before is None or e.run_id < before)
    ]
    chosen: Sequence[RunEntry] = matching[-limit:] if limit > 0 else []
    history = History()
    for entry in chosen:
        found = read_measurements(Path(reports_root) / entry.run_id)
        if found is None:
            continue
        history.runs.append(found[0])
        for point in found[1]:
            history.points.setdefault(point.key, []).append(point)
    return history
