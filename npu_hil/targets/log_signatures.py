"""Known messages in a board's own logs, and the class each puts a test in: data with their sources
(``npu_hil/targets/log_signatures.json`` for any Linux board, ``<vendor>/log_signatures.json`` for
a vendor's driver and runtime); the classes and what each does to a test:
docs/model-developer/failures.md."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from npu_hil.harness.errors import NpuHilError
from npu_hil.targets.registry import vendor_of

__all__ = [
    "LOG_CLASSES",
    "LogMatch",
    "LogSignature",
    "LogSignatureError",
    "LogVerdict",
    "classify",
    "fault_lines",
    "load_signatures",
    "signatures_for",
]

LOG_CLASSES = ("infrastructure", "compatibility", "product")
LOGS = ("kernel", "runtime")
SCHEMA = "npu-hil-log-signatures/1"
FILE_NAME = "log_signatures.json"
HERE = Path(__file__).resolve().parent
_FIELDS = ("id", "log", "regex", "class", "meaning", "source", "sample")


class LogSignatureError(NpuHilError):
    """A signature table that cannot be read (the file and the entry are named)."""


@dataclass(frozen=True)
class LogSignature:
    id: str
    log: str
    pattern: re.Pattern[str]
    log_class: str
    meaning: str
    source: str
    sample: str
    fault: str = ""


@dataclass(frozen=True)
class LogMatch:
    signature: LogSignature
    log: str
    line: str

    def to_dict(self) -> dict[str, str]:
        return {
            "id": self.signature.id,
            "class": self.signature.log_class,
            "log": self.log,
            "line": self.line,
            "meaning": self.signature.meaning,
            "source": self.signature.source,
        }


@dataclass(frozen=True)
class LogVerdict:
    """The class of a job's logs ("" when no signature matched) and every match, in order."""

    log_class: str
    matches: tuple[LogMatch, ...]


def load_signatures(path: str | Path) -> tuple[LogSignature, ...]:
    """Read and check one table (a missing file is no signatures: a vendor may have none)."""
    where = Path(path)
    if not where.exists():
        return ()
    try:
        document = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise LogSignatureError(f"{where}: unreadable: {exc}") from None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise LogSignatureError(f"{where}: expected schema {SCHEMA!r}")
    rows = document.get("signatures")
    if not isinstance(rows, list):
        raise LogSignatureError(f"{where}: signatures: expected a list")
    found = [_signature(row, f"{where}: signatures[{n}]") for n, row in enumerate(rows)]
    ids = [s.id for s in found]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise LogSignatureError(f"{where}: signature ids appear twice: {', '.join(twice)}")
    return tuple(found)


def _signature(row: object, where: str) -> LogSignature:
    if not isinstance(row, dict):
        raise LogSignatureError(f"{where}: expected an object, got {row!r}")
    missing = [k for k in _FIELDS if not isinstance(row.get(k), str) or not row.get(k)]
    if missing:
        raise LogSignatureError(f"{where}: missing or empty: {', '.join(missing)}")
    for key, allowed in (("log", LOGS), ("class", LOG_CLASSES)):
        if row[key] not in allowed:
            raise LogSignatureError(f"{where}: {key} must be one of {allowed}, got {row[key]!r}")
    try:
        pattern = re.compile(row["regex"])
    except re.error as exc:
        raise LogSignatureError(f"{where}: regex {row['regex']!r}: {exc}") from None
    if not pattern.search(row["sample"]):
        raise LogSignatureError(f"{where}: its sample does not match its regex")
    return LogSignature(
        row["id"],
        row["log"],
        pattern,
        row["class"],
        row["meaning"],
        row["source"],
        row["sample"],
        str(row.get("fault") or ""),
    )


@functools.cache
def signatures_for(target: str) -> tuple[LogSignature, ...]:
    """The vendor-neutral signatures, then the target's vendor's."""
    vendor = vendor_of(target)
    return load_signatures(HERE / FILE_NAME) + load_signatures(HERE / vendor / FILE_NAME)


def classify(target: str, *, kernel: Sequence[str], runtime: Sequence[str]) -> LogVerdict:
    """Every line of the job's kernel and runtime logs against the target's signatures; lines of
    several classes make the first of :data:`LOG_CLASSES` the job's."""
    matches: list[LogMatch] = []
    for log, lines in (("kernel", kernel), ("runtime", runtime)):
        chosen = [s for s in signatures_for(target) if s.log == log]
        for line in lines:
            for signature in chosen:
                if signature.pattern.search(line):
                    matches.append(LogMatch(signature, log, line))
                    break
    classes = {m.signature.log_class for m in matches}
    first = next((c for c in LOG_CLASSES if c in classes), "")
    return LogVerdict(first, tuple(matches))


def fault_lines(target: str, fault: str) -> dict[str, list[str]]:
    """The sample lines a simulated ``fault`` writes on a board of ``target``, per log (empty
    when no signature of the target's tables names the fault)."""
    out: dict[str, list[str]] = {log: [] for log in LOGS}
    for signature in signatures_for(target):
        if signature.fault == fault:
            out[signature.log].append(signature.sample)
    return out
