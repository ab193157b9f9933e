"""Does a compiled model go with a board? :func:`check_compatibility` holds its
:class:`~npu_hil.targets.artifact.ArtifactInfo` against the board's target and runtime versions by
the vendor's table (docs/model-developer/preflight.md), one :class:`Finding` per check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from npu_hil.harness.errors import CompatibilityError
from npu_hil.targets.artifact import ArtifactInfo, parse_version
from npu_hil.targets.compat_table import CompatTable, Rule, VersionSource, table_for

__all__ = ["Finding", "check_compatibility", "refusal", "runtime_version"]


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
        return Finding(
            "target-platform",
            "unknown",
            f"the {table.vendor} table has no row for {target}",
            table.path,
        )
    built = tuple(p.lower() for p in info.target_platforms)
    if not built:
        why = "; ".join(info.unverified) or "the file names none"
        return Finding(
            "target-platform",
            "unknown",
            f"{info.name} does not say which platform it was built for ({why}); a board of "
            f"{target} loads models for {', '.join(row.platforms)}",
            row.source,
        )
    if any(p in row.platforms for p in built):
        return Finding(
            "target-platform",
            "ok",
            f"{info.name} is built for {', '.join(built)}; {target} loads it",
            row.source,
        )
    if any(p in row.same_program for p in built):
        return Finding(
            "target-platform",
            "warn",
            f"{info.name} is built for {', '.join(built)}, the board is {target}: the compiler "
            "writes the same program for both, but whether the runtime accepts the other "
            "platform's name was not measured",
            row.same_program_source,
        )
    return Finding(
        "target-platform",
        "refuse",
        f"{info.name} is built for {', '.join(built)}; a board of {target} loads models for "
        f"{', '.join(row.platforms)}",
        row.source,
        reason="the target platform differs",
    )


def _runtime(info: ArtifactInfo, table: CompatTable, versions: Mapping[str, Any]) -> list[Finding]:
    if table.runtime is None:
        return [
            Finding(
                "runtime", "unknown", f"the {table.vendor} table names no runtime version fields"
            )
        ]
    found = runtime_version(table, versions)
    name = table.runtime.name
    if found is None:
        return [
            Finding(
                "runtime",
                "unknown",
                f"the board reported no {name} version ({' or '.join(table.runtime.keys)}): "
                "its pairing with the model is unknown",
            )
        ]
    key, text = found
    runtime = parse_version(text)
    toolkit = parse_version(info.toolkit_version)
    if runtime is None:
        return [Finding("runtime", "unknown", f"{name} {key} {text!r} holds no version number")]
    if toolkit is None:
        return [
            Finding(
                "runtime",
                "unknown",
                f"{info.name} names no toolkit version: its pairing with {name} "
                f"{_v(runtime)} is unknown",
            )
        ]
    fired = [
        Finding(rule.id, rule.status, said, rule.source, rule.reason)
        for rule in table.rules
        if (said := _fired(rule, info, name, runtime, toolkit)) is not None
    ]
    if fired:
        return fired
    return [
        Finding(
            "runtime",
            "ok",
            f"{name} {_v(runtime)} with a model of toolkit {_v(toolkit)}: no rule of the table "
            "refuses it",
            table.path,
        )
    ]


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
