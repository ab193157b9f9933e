"""Unstable and quarantined cases in the reports: summary.json's lists, the JUnit properties, the
page's markers.

A case is *unstable* when it passed only after a retry (:attr:`TestRecord.unstable` holds the
first failure's reason); it is a flag on a pass, so CI keeps the case green while the report
says it needed a second try. A case is *quarantined* when a quarantine entry lists it
(:attr:`TestRecord.quarantine`); its outcome is ``quarantined`` when it failed, and a listed
case that passed is one whose entry can go.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from npu_hil.harness.report.records import QUARANTINED, TestRecord

__all__ = [
    "CSS",
    "stability_badges",
    "stability_notes",
    "stability_properties",
    "stability_summary",
]


def stability_properties(record: TestRecord) -> dict[str, str]:
    """JUnit properties: ``unstable`` (the first failure's reason) and ``quarantine.<key>``
    (reason, link, expires, entry, test) for a listed case."""
    props: dict[str, str] = {}
    if record.unstable:
        props["unstable"] = record.unstable
    for key, value in sorted(record.quarantine.items()):
        props[f"quarantine.{key}"] = value
    return props


def _case(record: TestRecord) -> dict[str, Any]:
    return {"nodeid": record.nodeid, "board": record.board, "target": record.target}


def stability_summary(records: Sequence[TestRecord]) -> dict[str, Any]:
    """summary.json's ``unstable`` and ``quarantine`` entries, each with a count and a list.

    ``quarantine.count`` is the failures the list kept from failing the run; ``now_passing``
    names the listed cases that passed (their entries can be removed)."""
    unstable = [
        {**_case(r), "reason": r.unstable, "retries": len(r.retried)} for r in records if r.unstable
    ]
    listed = [
        {**_case(r), "outcome": r.outcome, "message": r.message, **r.quarantine}
        for r in records
        if r.quarantine
    ]
    return {
        "unstable": {"count": len(unstable), "cases": unstable},
        "quarantine": {
            "count": sum(r.outcome == QUARANTINED for r in records),
            "listed": len(listed),
            "now_passing": [c["nodeid"] for c in listed if c["outcome"] == "passed"],
            "cases": listed,
        },
    }


def stability_badges(record: TestRecord) -> str:
    """The markers beside a case's outcome on the page: UNSTABLE, QUARANTINED."""
    badges = ""
    if record.unstable:
        badges += f' <span class="b unstable" title="{escape(record.unstable)}">UNSTABLE</span>'
    if record.quarantine:
        reason = escape(record.quarantine.get("reason", ""))
        badges += f' <span class="b quarantined" title="{reason}">QUARANTINED</span>'
    return badges


def stability_notes(record: TestRecord) -> str:
    """The lines under a case's id: the first failure of an unstable pass; the quarantine's
    reason, link, expiry and entry."""
    notes = ""
    if record.unstable:
        notes += (
            '<div class="unstable-why">unstable: passed only on retry; first failure: '
            f"{escape(record.unstable)}</div>"
        )
    if record.quarantine:
        q = record.quarantine
        link = q.get("link")
        ref = f' <a href="{escape(link)}">{escape(link)}</a>' if link else ""
        notes += (
            f'<div class="quarantine-why">quarantined: {escape(q.get("reason", ""))}{ref} '
            f"(until {escape(q.get('expires', ''))}; {escape(q.get('entry', ''))})</div>"
        )
    return notes


CSS = (
    ".unstable{background:#fff4c2;color:#6b5200}.quarantined{background:#e8dcff;color:#4a2a8a}"
    ".unstable-why{color:#6b5200}.quarantine-why{color:#4a2a8a}"
)
