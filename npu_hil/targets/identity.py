"""Which SoC a board says it is, against the inventory's target: the device-tree compatible strings
of each vendor's ``npu_hil/targets/<vendor>/identity.json`` (each with its ``source`` and whether it
was ``verified``) decide ``match``, ``mismatch`` or ``unknown`` (a warning, never a refusal); the
rules: docs/farm/health.md and :func:`judge_identity`."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from typing_extensions import TypedDict

from npu_hil.harness.errors import NpuHilError

__all__ = [
    "Compatible",
    "IdentityRow",
    "IdentityTableError",
    "IdentityVerdict",
    "identity_rows",
    "judge_identity",
    "load_identity_table",
]


class IdentityTableError(NpuHilError):
    """An identity table that cannot be read (the file and the row are named)."""


@dataclass(frozen=True)
class Compatible:
    string: str
    verified: bool
    source: str


@dataclass(frozen=True)
class IdentityRow:
    target: str
    compatible: tuple[Compatible, ...]
    note: str = ""


class IdentityDocument(TypedDict):
    """:meth:`IdentityVerdict.to_dict`: a board's identity check as results and reports hold it."""

    state: str
    reported: list[str]
    detail: str
    other_target: str | None


@dataclass(frozen=True)
class IdentityVerdict:
    """``state`` (``match``, ``mismatch`` or ``unknown``), the strings the board ``reported``, the
    ``other_target`` a mismatch found and a one-line ``detail`` naming both sides."""

    state: str
    reported: tuple[str, ...]
    detail: str
    other_target: str | None = None

    def to_dict(self) -> IdentityDocument:
        return {
            "state": self.state,
            "reported": list(self.reported),
            "detail": self.detail,
            "other_target": self.other_target,
        }


def load_identity_table(path: str | Path) -> dict[str, IdentityRow]:
    """target → row of one vendor's table; IdentityTableError naming the file and row."""
    where = str(path)
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise IdentityTableError(f"{where}: cannot read the identity table: {exc}") from None
    if not isinstance(document, dict) or document.get("schema") != 1:
        raise IdentityTableError(f"{where}: expected an object with schema 1")
    rows: dict[str, IdentityRow] = {}
    for n, row in enumerate(document.get("targets") or []):
        label = f"{where}: targets[{n}]"
        if not isinstance(row, dict) or not isinstance(row.get("target"), str):
            raise IdentityTableError(f"{label}: expected an object with a target name")
        strings = []
        for m, entry in enumerate(row.get("compatible") or []):
            if not (
                isinstance(entry, dict)
                and isinstance(entry.get("string"), str)
                and isinstance(entry.get("verified"), bool)
                and isinstance(entry.get("source"), str)
                and entry["source"].strip()
            ):
                raise IdentityTableError(
                    f"{label}.compatible[{m}]: expected string, verified (true/false) and a "
                    f"source, got {entry!r}"
                )
            strings.append(Compatible(entry["string"].strip(), entry["verified"], entry["source"]))
        rows[row["target"]] = IdentityRow(row["target"], tuple(strings), str(row.get("note", "")))
    return rows


@functools.lru_cache(maxsize=1)
def identity_rows() -> dict[str, IdentityRow]:
    """Every registered vendor's rows, target → row (a vendor without a table adds none)."""
    from npu_hil.targets.registry import units

    rows: dict[str, IdentityRow] = {}
    for unit in units():
        if unit.identity is not None:
            found = load_identity_table(unit.identity)
            rows.update({t: r for t, r in found.items() if t in unit.targets})
    return rows


def _quoted(strings: Sequence[str]) -> str:
    return ", ".join(f'"{s}"' for s in strings) or "nothing"


def judge_identity(
    target: str, reported: Sequence[str], *, source: str = "/proc/device-tree/compatible"
) -> IdentityVerdict:
    """The board's ``reported`` compatible strings against ``target`` (see the module doc)."""
    table = identity_rows()
    given = tuple(s.strip() for s in reported if s.strip())
    row = table.get(target)
    if row is None or not row.compatible:
        why = row.note if row is not None and row.note else "no identity table for it"
        return IdentityVerdict("unknown", given, f"target {target}: identity not checked ({why})")
    if not given:
        return IdentityVerdict("unknown", given, f"{source}: absent or empty")
    for entry in row.compatible:
        if entry.string in given:
            trust = "" if entry.verified else " (an unverified row)"
            return IdentityVerdict(
                "match", given, f'{source} names "{entry.string}": {target}{trust}'
            )
    unverified: list[str] = []
    for other, other_row in table.items():
        if other == target:
            continue
        for entry in other_row.compatible:
            if entry.string not in given:
                continue
            if entry.verified:
                return IdentityVerdict(
                    "mismatch",
                    given,
                    f"the inventory says {target}, but the board's {source} names "
                    f'"{entry.string}", the SoC of target {other} (reported: {_quoted(given)})',
                    other,
                )
            unverified.append(f"{other} (unverified)")
    looks = f"; it looks like {', '.join(unverified)}" if unverified else ""
    expected = _quoted([e.string for e in row.compatible])
    return IdentityVerdict(
        "unknown",
        given,
        f"{source} names {_quoted(given)}, none of {target}'s ({expected}){looks}",
    )
