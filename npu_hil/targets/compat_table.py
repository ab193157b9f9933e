"""The compatibility tables (``npu_hil/targets/<vendor>/compatibility.json``, each row with its
``source``), read and checked: every error names the file and the row (``rules[2]
(format-6-old-runtimes): ...``). What they hold: docs/model-developer/preflight.md."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from npu_hil.harness.errors import CompatibilityError
from npu_hil.targets.artifact import parse_version

__all__ = [
    "RULE_KINDS",
    "STATUSES",
    "CompatTable",
    "Rule",
    "TargetRow",
    "VersionSource",
    "load_table",
    "table_for",
]

STATUSES = ("refuse", "warn")
"""What a rule that fires makes of a run: ``refuse`` stops it before anything is deployed,
``warn`` is reported beside it."""
RULE_KINDS = ("runtime_at_least_toolkit", "same_major", "format_refused_by")
"""``runtime_at_least_toolkit``: fires when the board's runtime is older than the toolkit that
built the model; ``same_major``: when their major versions differ (and the runtime is not
older); ``format_refused_by``: when the model's file-format version is ``format_version`` and the
runtime's version is one of ``runtimes`` (versions reported to refuse that format)."""


_ROW_KEYS = ("target", "platforms", "same_program", "same_program_source", "source")
_ROW_EXTRAS = ("chip_id", "march", "note")
"""A target row's fields the checks do not read, kept with it."""


@dataclass(frozen=True)
class VersionSource:
    """Which fields of the board's ``versions`` name a component (the first present wins)."""

    name: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class TargetRow:
    target: str
    platforms: tuple[str, ...]
    """The target-platform names of compiled models a board of this target loads."""
    same_program: tuple[str, ...]
    """Platforms whose compiled program is the same as this target's (measured), though the
    file names another platform: reported as a warning, not refused."""
    source: str
    extras: dict[str, Any]
    same_program_source: str = ""
    """What shows that the program is the same (a measurement, a document)."""


@dataclass(frozen=True)
class Rule:
    id: str
    kind: str
    status: str
    reason: str
    """The words a refusal says (``the runtime is older than the toolkit``)."""
    source: str
    format_version: int | None = None
    runtimes: tuple[tuple[int, int, int], ...] = ()
    note: str = ""


@dataclass(frozen=True)
class CompatTable:
    path: str
    vendor: str
    runtime: VersionSource | None
    driver: VersionSource | None
    targets: dict[str, TargetRow]
    rules: tuple[Rule, ...]

    def row(self, target: str) -> TargetRow | None:
        return self.targets.get(target)


def load_table(
    path: str | Path, *, vendor: str | None = None, targets: tuple[str, ...] = ()
) -> CompatTable:
    """Read and check the table at ``path``; ``vendor`` and ``targets`` (when given) are what
    its vendor unit serves, and a row for a target outside them is an error."""
    where = str(path)
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CompatibilityError(f"{where}: cannot read the compatibility table: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CompatibilityError(f"{where}: not JSON: {exc}") from None
    check = _Checker(where)
    top = check.mapping(
        document,
        "the table",
        {"schema", "vendor", "runtime", "driver", "targets", "rules", "notes"},
    )
    if top.get("schema") != 1:
        check.fail("schema", f"expected 1, got {top.get('schema')!r}")
    name = check.text(top.get("vendor"), "vendor")
    if vendor is not None and name != vendor:
        check.fail("vendor", f"expected {vendor!r}, got {name!r}")
    runtime = check.version_source(top.get("runtime"), "runtime")
    driver = check.version_source(top.get("driver"), "driver")
    rows: dict[str, TargetRow] = {}
    for number, raw in enumerate(check.sequence(top.get("targets"), "targets")):
        label = f"targets[{number}]"
        item = check.mapping(raw, label, {*_ROW_KEYS, *_ROW_EXTRAS})
        target = check.text(item.get("target"), f"{label}.target")
        label = f"{label} ({target})"
        if targets and target not in targets:
            check.fail(label, f"{target!r} is not a target of {name} ({', '.join(targets)})")
        if target in rows:
            check.fail(label, "a second row for the same target")
        platforms = check.names(item.get("platforms"), f"{label}.platforms", empty=False)
        same = check.names(item.get("same_program", []), f"{label}.same_program", empty=True)
        if set(platforms) & set(same):
            check.fail(label, "a platform is both loaded and only 'same_program'")
        source = check.text(item.get("source"), f"{label}.source")
        same_source = ""
        if same:
            same_source = check.text(
                item.get("same_program_source"), f"{label}.same_program_source"
            )
        elif "same_program_source" in item:
            check.fail(label, "same_program_source without same_program")
        extras: dict[str, Any] = {k: item[k] for k in _ROW_EXTRAS if k in item}
        rows[target] = TargetRow(target, platforms, same, source, extras, same_source)
    rules: list[Rule] = []
    for number, raw in enumerate(check.sequence(top.get("rules", []), "rules")):
        label = f"rules[{number}]"
        item = check.mapping(
            raw,
            label,
            {"id", "kind", "status", "reason", "source", "format_version", "runtimes", "note"},
        )
        rule_id = check.text(item.get("id"), f"{label}.id")
        label = f"{label} ({rule_id})"
        if any(r.id == rule_id for r in rules):
            check.fail(label, "a second rule with the same id")
        kind = check.choice(item.get("kind"), f"{label}.kind", RULE_KINDS)
        status = check.choice(item.get("status"), f"{label}.status", STATUSES)
        format_version = None
        versions: tuple[tuple[int, int, int], ...] = ()
        if kind == "format_refused_by":
            fv = item.get("format_version")
            if not isinstance(fv, int) or isinstance(fv, bool):
                check.fail(f"{label}.format_version", f"expected an integer, got {fv!r}")
            format_version = fv
            versions = tuple(
                check.version(v, f"{label}.runtimes[{i}]")
                for i, v in enumerate(check.sequence(item.get("runtimes"), f"{label}.runtimes"))
            )
            if not versions:
                check.fail(f"{label}.runtimes", "expected at least one runtime version")
        elif "format_version" in item or "runtimes" in item:
            check.fail(
                label, f"format_version and runtimes belong to format_refused_by rules, not {kind}"
            )
        if runtime is None:
            check.fail(label, "a runtime rule, and the table names no runtime version fields")
        reason = check.text(item.get("reason"), f"{label}.reason")
        source = check.text(item.get("source"), f"{label}.source")
        note = str(item.get("note", ""))
        rules.append(Rule(rule_id, kind, status, reason, source, format_version, versions, note))
    return CompatTable(where, name, runtime, driver, rows, tuple(rules))


@functools.cache
def table_for(vendor: str) -> CompatTable | None:
    """The table of the registered vendor ``vendor`` (None when its unit has none)."""
    from npu_hil.targets.registry import unit_named

    unit = unit_named(vendor)
    if unit.compatibility is None:
        return None
    return load_table(unit.compatibility, vendor=unit.name, targets=unit.targets)


class _Checker:
    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, label: str, problem: str) -> NoReturn:
        raise CompatibilityError(f"{self.where}: {label}: {problem}")

    def mapping(self, value: Any, label: str, keys: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(label, f"expected an object, got {type(value).__name__}")
        unknown = sorted(set(value) - keys)
        if unknown:
            self.fail(
                label, f"unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(keys))})"
            )
        return value

    def sequence(self, value: Any, label: str) -> list[Any]:
        if not isinstance(value, list):
            self.fail(label, f"expected a list, got {type(value).__name__}")
        return value

    def text(self, value: Any, label: str) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(label, f"expected a non-empty string, got {value!r}")
        return str(value)

    def names(self, value: Any, label: str, *, empty: bool) -> tuple[str, ...]:
        items = self.sequence(value, label)
        if not empty and not items:
            self.fail(label, "expected at least one name")
        return tuple(self.text(v, f"{label}[{i}]").lower() for i, v in enumerate(items))

    def choice(self, value: Any, label: str, allowed: tuple[str, ...]) -> str:
        if value not in allowed:
            self.fail(label, f"expected one of {', '.join(allowed)}, got {value!r}")
        return str(value)

    def version(self, value: Any, label: str) -> tuple[int, int, int]:
        parsed = parse_version(value)
        if parsed is None:
            self.fail(label, f"expected a version such as '1.6.0', got {value!r}")
        return parsed

    def version_source(self, value: Any, label: str) -> VersionSource | None:
        if value is None:
            return None
        item = self.mapping(value, label, {"name", "keys", "source"})
        return VersionSource(
            self.text(item.get("name"), f"{label}.name"),
            self.names(item.get("keys"), f"{label}.keys", empty=False),
        )
