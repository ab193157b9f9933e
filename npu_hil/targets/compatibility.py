"""Does a compiled model go with a board? The vendor's compatibility table
(``npu_hil/targets/<vendor>/compatibility.json``, each row with its ``source``) is read and checked
(every error names the file and the row: ``rules[2] (format-6-old-runtimes): ...``), and
:func:`check_compatibility` holds a model's :class:`~npu_hil.targets.artifact.ArtifactInfo` against
the board's target and runtime versions by it, one :class:`Finding` per check. What the tables
hold: docs/model-developer/preflight.md."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NoReturn

from npu_hil.harness.errors import CompatibilityError
from npu_hil.targets.artifact import ArtifactInfo, parse_version

__all__ = [
    "RULE_KINDS",
    "STATUSES",
    "CompatTable",
    "Finding",
    "Rule",
    "TargetRow",
    "VersionSource",
    "check_compatibility",
    "load_table",
    "refusal",
    "runtime_version",
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


@dataclass(frozen=True)
class Finding:
    check: str
    """``target-platform``, ``runtime``, ``driver``, or a rule's id."""
    status: str
    """``ok``, ``refuse`` (the run stops before anything is deployed), ``warn``, ``unknown`` (nobody
    said: never taken for a match) or ``skipped`` (not checked, and why)."""
    message: str
    source: str = ""
    reason: str = ""
    """For a refusal: the few words the error message joins (``the target platform differs``)."""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def _reported(
    source: VersionSource | None, versions: Mapping[str, object]
) -> tuple[str, str] | None:
    """(field, value) of the first of ``source``'s fields the board reported, or None."""
    for key in source.keys if source is not None else ():
        value = versions.get(key)
        if isinstance(value, str) and value.strip():
            return key, value.strip()
    return None


def runtime_version(
    table: CompatTable | None, versions: Mapping[str, Any]
) -> tuple[str, str] | None:
    """(field, value) of the board's runtime version by the table's fields, or None."""
    return _reported(table.runtime if table is not None else None, versions)


def check_compatibility(
    info: ArtifactInfo,
    target: str,
    board_versions: Mapping[str, Any] | None,
    *,
    simulated: bool = False,
) -> list[Finding]:
    """Every finding for deploying the model ``info`` describes to a board of ``target`` whose
    runtime reported ``board_versions`` (None: not asked). On a simulated board only the target
    platform is checked: it runs the harness's own runtime, which no toolkit version binds."""
    table = table_for(info.vendor)
    if table is None:
        return [Finding("table", "unknown", f"vendor {info.vendor!r} has no compatibility table")]
    findings = [_platform(info, target, table)]
    if simulated:
        findings.append(
            Finding(
                "runtime",
                "skipped",
                "a simulated board runs the harness's own runtime: the toolkit/runtime pairing "
                "is not checked, only the target platform",
            )
        )
        return findings
    findings.extend(_runtime(info, table, board_versions or {}))
    findings.extend(_driver(table, board_versions or {}))
    return findings


def refusal(
    info: ArtifactInfo,
    target: str,
    board: str,
    board_versions: Mapping[str, Any] | None,
    findings: Sequence[Finding],
) -> CompatibilityError | None:
    """The error for ``findings`` when one refuses the run, else None. Its message:
    ``model yolov5.rknn built by toolkit 2.5.0 for rk3588; board rk3566-01 (rk3566) runtime
    1.6.0: the target platform differs``."""
    refused = [f for f in findings if f.status == "refuse"]
    if not refused:
        return None
    built = f"model {info.name} built by toolkit {info.toolkit_version or '(unknown)'}"
    built += f" for {', '.join(info.target_platforms) or '(no platform named)'}"
    table = table_for(info.vendor)
    runtime = runtime_version(table, board_versions or {})
    parsed = parse_version(runtime[1]) if runtime else None
    runs = f" runtime {_v(parsed) if parsed else runtime[1]}" if runtime else ""
    reasons = _joined([f.reason or f.message for f in refused])
    # The sources stay in the findings (the record shows them); the message stays readable.
    details = "; ".join(f.message for f in refused)
    message = f"{built}; board {board} ({target}){runs}: {reasons} ({details})"
    return CompatibilityError(message, findings=tuple(f.to_dict() for f in findings))


def _joined(parts: list[str]) -> str:
    unique = list(dict.fromkeys(parts))
    return unique[0] if len(unique) == 1 else ", ".join(unique[:-1]) + " and " + unique[-1]


def _platform(info: ArtifactInfo, target: str, table: CompatTable) -> Finding:
    row = table.row(target)
    if row is None:
        said = f"the {table.vendor} table has no row for {target}"
        return Finding("target-platform", "unknown", said, table.path)
    built = tuple(p.lower() for p in info.target_platforms)
    is_built = f"{info.name} is built for {', '.join(built)}"
    loads = f"a board of {target} loads models for {', '.join(row.platforms)}"
    if not built:
        why = "; ".join(info.unverified) or "the file names none"
        said = f"{info.name} does not say which platform it was built for ({why}); {loads}"
        return Finding("target-platform", "unknown", said, row.source)
    if any(p in row.platforms for p in built):
        return Finding("target-platform", "ok", f"{is_built}; {target} loads it", row.source)
    if any(p in row.same_program for p in built):
        said = (
            f"{is_built}, the board is {target}: the compiler writes the same program for both, "
            "but whether the runtime accepts the other platform's name was not measured"
        )
        return Finding("target-platform", "warn", said, row.same_program_source)
    differs = "the target platform differs"
    return Finding("target-platform", "refuse", f"{is_built}; {loads}", row.source, differs)


def _runtime(info: ArtifactInfo, table: CompatTable, versions: Mapping[str, Any]) -> list[Finding]:
    """The rules that fire for the board's runtime and the model's toolkit (``ok`` when none
    does), or why their pairing is ``unknown``."""
    found = runtime_version(table, versions)
    runtime = parse_version(found[1]) if found else None
    toolkit = parse_version(info.toolkit_version)
    if table.runtime is None:
        unknown = f"the {table.vendor} table names no runtime version fields"
    elif found is None:
        unknown = (
            f"the board reported no {table.runtime.name} version "
            f"({' or '.join(table.runtime.keys)}): its pairing with the model is unknown"
        )
    elif runtime is None:
        unknown = f"{table.runtime.name} {found[0]} {found[1]!r} holds no version number"
    elif toolkit is None:
        unknown = (
            f"{info.name} names no toolkit version: its pairing with {table.runtime.name} "
            f"{_v(runtime)} is unknown"
        )
    else:
        name = table.runtime.name
        fired = [
            Finding(rule.id, rule.status, said, rule.source, rule.reason)
            for rule in table.rules
            if (said := _fired(rule, info, name, runtime, toolkit)) is not None
        ]
        return fired or [
            Finding(
                "runtime",
                "ok",
                f"{name} {_v(runtime)} with a model of toolkit {_v(toolkit)}: no rule of the "
                "table refuses it",
                table.path,
            )
        ]
    return [Finding("runtime", "unknown", unknown)]


def _fired(
    rule: Rule, info: ArtifactInfo, name: str, runtime: tuple[int, ...], toolkit: tuple[int, ...]
) -> str | None:
    """What ``rule`` says of this runtime and toolkit when it fires, else None."""
    if rule.kind == "runtime_at_least_toolkit":
        fires = runtime < toolkit
        text = (
            f"{name} {_v(runtime)} is older than the toolkit {_v(toolkit)} that built {info.name}"
        )
    elif rule.kind == "same_major":
        fires = runtime >= toolkit and runtime[0] != toolkit[0]
        text = f"{name} {_v(runtime)} and toolkit {_v(toolkit)} differ in their major version"
    else:  # format_refused_by, the last of RULE_KINDS (the table's loader checks the kind)
        fires = info.format_version == rule.format_version and tuple(runtime) in rule.runtimes
        text = (
            f"{name} {_v(runtime)} was reported to refuse file-format version "
            f"{info.format_version}, which {info.name} has"
        )
    if not fires:
        return None
    return f"{text} ({rule.note})" if rule.note else text


def _driver(table: CompatTable, versions: Mapping[str, Any]) -> list[Finding]:
    found = _reported(table.driver, versions)
    if table.driver is None or found is None:
        return []
    return [
        Finding(
            "driver",
            "unknown",
            f"{table.driver.name} {found[1]}: no rule of the table pairs it with a toolkit "
            "(reported, not checked)",
        )
    ]


def _v(version: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in version)
