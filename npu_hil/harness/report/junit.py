"""JUnit XML in the shape CI servers read: one testsuite, one testcase per record.

Each testcase carries ``<properties>``: board, target, backend, simulated, ran_on (hw, sim or
none), the runtime versions and artifact hashes (prefixed ``runtime.`` and ``artifact.``) and the
record's own properties.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from npu_hil.harness.report.boardlog import board_log_properties, board_log_text
from npu_hil.harness.report.records import TestRecord, accuracy_properties
from npu_hil.harness.report.sanitize import clean_text
from npu_hil.harness.report.stability import stability_properties

# XML 1.0 forbids most control characters, surrogates and U+FFFE/U+FFFF: a device dump in a
# message must not break the file. The records are clean already; the rest (meta) is cleaned here.
_clean = clean_text


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


def build_junit(
    records: Sequence[TestRecord], meta: Mapping[str, Any], suite_name: str = "npu-hil"
) -> bytes:
    counts = Counter(r.outcome for r in records)
    suite = ET.Element(
        "testsuite",
        {
            "name": suite_name,
            "tests": str(len(records)),
            "failures": str(counts["failed"]),
            "errors": str(counts["error"]),
            "skipped": str(counts["skipped"] + counts["quarantined"]),
            "time": f"{sum(r.duration_s for r in records):.3f}",
            "timestamp": str(meta.get("started", "")),
        },
    )
    suite_props = ET.SubElement(suite, "properties")
    for key in ("run_id", "backend", "inventory"):
        if key in meta:
            ET.SubElement(suite_props, "property", name=key, value=_clean(str(meta[key])))
    for record in records:
        classname, name = split_nodeid(record.nodeid)
        attributes = {"classname": _clean(classname), "name": _clean(name)}
        case = ET.SubElement(suite, "testcase", {**attributes, "time": f"{record.duration_s:.3f}"})
        props = ET.SubElement(case, "properties")
        for key, value in testcase_properties(record):
            ET.SubElement(props, "property", name=_clean(key), value=_clean(value))
        # A quarantined failure is a skip to CI (the run stays green), its reason first.
        tag = {"failed": "failure", "error": "error", "skipped": "skipped"}.get(record.outcome)
        message = record.message
        if record.outcome == "quarantined":
            tag, message = "skipped", f"quarantined: {record.quarantine.get('reason', '')}"
            message += f" (failed: {record.message})" if record.message else ""
        if tag is not None:
            element = ET.SubElement(case, tag, message=_clean(message))
            element.text = _clean(record.longrepr or record.message)
        out = "\n".join(x for x in (record.boot_log, board_log_text(record)) if x)
        if out:
            ET.SubElement(case, "system-out").text = _clean(out)
    ET.indent(suite)
    data: bytes = ET.tostring(suite, encoding="utf-8", xml_declaration=True)
    return data
