"""summary.json: counts per outcome, per board, per target, simulated vs hardware, every record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.report.records import OUTCOMES, TestRecord

SCHEMA_VERSION = 1


def _zero() -> dict[str, int]:
    return dict.fromkeys(OUTCOMES, 0)


def _count(counts: dict[str, int], outcome: str) -> None:
    counts[outcome] = counts.get(outcome, 0) + 1


def build_summary(records: Sequence[TestRecord], meta: Mapping[str, Any]) -> dict[str, Any]:
    totals = _zero()
    per_board: dict[str, dict[str, Any]] = {}
    per_target: dict[str, dict[str, int]] = {}
    # A case that never had a board (a SoC no board of the inventory serves) ran on neither.
    by_backend = {"simulated": _zero(), "hardware": _zero(), "no board": _zero()}
    for record in records:
        _count(totals, record.outcome)
        board = record.board or "(no board)"
        entry = per_board.setdefault(
            board,
            {"target": record.target, "backend": record.backend, "simulated": False, **_zero()},
        )
        _count(entry, record.outcome)
        entry["simulated"] = bool(entry["simulated"]) or record.simulated
        _count(per_target.setdefault(record.target or "(no target)", _zero()), record.outcome)
        kind = (
            "simulated" if record.simulated else "no board" if record.board is None else "hardware"
        )
        _count(by_backend[kind], record.outcome)
    return {
        "schema": SCHEMA_VERSION,
        "meta": dict(meta),
        "total": len(records),
        "outcomes": totals,
        "simulated": sum(by_backend["simulated"].values()),
        "hardware": sum(by_backend["hardware"].values()),
        "no_board": sum(by_backend["no board"].values()),
        "by_backend": by_backend,
        "per_board": dict(sorted(per_board.items())),
        "per_target": dict(sorted(per_target.items())),
        "records": [r.to_dict() for r in records],
    }
