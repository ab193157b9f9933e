"""JUnit XML as CI servers read it: one testsuite, one testcase per record with its
``<properties>`` (board, target, ``runtime.*``, ``artifact.*``...: docs/farm/nightly.md)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

from npu_hil.harness.report.boardlog import board_log_properties, board_log_text
from npu_hil.harness.report.records import TestRecord, accuracy_properties
from npu_hil.harness.report.sanitize import clean_text
from npu_hil.harness.report.stability import stability_properties

if TYPE_CHECKING:
    from npu_hil.harness.report.writer import CaseTexts


def split_nodeid(nodeid: str) -> tuple[str, str]:
    """(classname, name) the way pytest's junitxml does: path parts and classes dotted."""
    parts = nodeid.split("::")
    path = parts[0]
    if path.endswith(".py"):
        path = path[:-3]
    classname = ".".join([path.replace("/", ".").replace("\\", "."), *parts[1:-1]])
    return classname, parts[-1] if len(parts) > 1 else nodeid


def testcase_properties(record: TestRecord) -> list[tuple[str, str]]:
    """The record's fields first, then its own properties (a key already there is not repeated:
    the plugin copies board, target and the like into ``properties`` too)."""
    props: dict[str, str] = {
        "board": record.board or "",
        "target": record.target or "",
        "backend": record.backend or "",
        "simulated": "true" if record.simulated else "false",
        # where the case really ran: hw, sim, or none (skipped, unreachable board, no board)
        "ran_on": record.provenance or "none",
    }
    props.update({f"runtime.{k}": v for k, v in sorted(record.runtime_versions.items())})
    props.update({f"artifact.{k}": v for k, v in sorted(record.artifact_hashes.items())})
    props.update(accuracy_properties(record.tensors))
    props.update(stability_properties(record))  # unstable, quarantine.*
    props.update(board_log_properties(record))  # board_log.class, .signatures, .kernel
    if record.baseline_note:  # a changed test's figures start a new baseline
        props["baseline"] = record.baseline_note
    for key, value in sorted(record.properties.items()):
        props.setdefault(key, str(value))
    return list(props.items())


def _attr(value: str) -> str:
    """``value`` quoted as an XML attribute, as ElementTree writes it (newlines and tabs as
    character references, so a reader gets them back)."""
    # Most values (figures, names, hashes) need nothing: one regex search, not seven replaces.
    if _ATTR_SPECIAL.search(value) is None:
        return f'"{value}"'
    return f'"{escape(value, _ATTR_ENTITIES)}"'


_ATTR_SPECIAL = re.compile(r'[&<>"\n\r\t]')
# beyond the &, < and > that escape() always replaces
_ATTR_ENTITIES = {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#09;"}


def _property_lines(pairs: Sequence[tuple[str, str]], indent: str) -> list[str]:
    return [f"{indent}<property name={_attr(k)} value={_attr(v)} />" for k, v in pairs]


def junit_chunks(
    records: Sequence[TestRecord], meta: Mapping[str, Any], texts: CaseTexts | None = None
) -> Iterator[bytes]:
    """The run's JUnit file in pieces, a ``<testcase>`` each; ``texts``: the cases' elements
    made as they arrived, if any."""
    # Written as text rather than through an ElementTree: at 12,000 cases the tree's
    # serializer took 5-6 s of a run's bookkeeping, these lines about 1 s. Every value is
    # escaped, and a property test parses the result back.
    counts = Counter(r.outcome for r in records)
    suite_attributes = {
        "name": "npu-hil",
        "tests": str(len(records)),
        "failures": str(counts["failed"]),
        "errors": str(counts["error"]),
        "skipped": str(counts["skipped"] + counts["quarantined"]),
        "time": f"{sum(r.duration_s for r in records):.3f}",
        # XML 1.0 forbids most control characters: the records are clean already (scrubbed
        # where they are made), the meta is cleaned here
        "timestamp": clean_text(str(meta.get("started", ""))),
    }
    head = " ".join(f"{k}={_attr(v)}" for k, v in suite_attributes.items())
    lines = ["<?xml version='1.0' encoding='utf-8'?>", f"<testsuite {head}>", "  <properties>"]
    suite_keys = ("run_id", "backend", "inventory")
    suite_props = [(key, clean_text(str(meta[key]))) for key in suite_keys if key in meta]
    lines += _property_lines(suite_props, "    ")
    lines.append("  </properties>")
    yield ("\n".join(lines) + "\n").encode("utf-8")
    for record in records:
        yield texts.junit(record) if texts is not None else testcase_text(record).encode("utf-8")
    yield b"</testsuite>\n"


def testcase_text(record: TestRecord) -> str:
    """One ``<testcase>`` element, its lines, and a newline: the record's text is clean already
    (records are scrubbed and cleaned where they are made), so it is only escaped here."""
    classname, name = split_nodeid(record.nodeid)
    lines = [
        f"  <testcase classname={_attr(classname)} name={_attr(name)}"
        f' time="{record.duration_s:.3f}">',
        "    <properties>",
        *_property_lines(testcase_properties(record), "      "),
        "    </properties>",
    ]
    # A quarantined failure is a skip to CI (the run stays green), its reason first.
    tag = {"failed": "failure", "error": "error", "skipped": "skipped"}.get(record.outcome)
    message = record.message
    if record.outcome == "quarantined":
        tag, message = "skipped", f"quarantined: {record.quarantine.get('reason', '')}"
        message += f" (failed: {record.message})" if record.message else ""
    if tag is not None:
        text = escape(record.longrepr or record.message)
        lines.append(f"    <{tag} message={_attr(message)}>{text}</{tag}>")
    out = "\n".join(x for x in (record.boot_log, board_log_text(record)) if x)
    if out:
        lines.append(f"    <system-out>{escape(out)}</system-out>")
    lines.append("  </testcase>\n")
    return "\n".join(lines)
