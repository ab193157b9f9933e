"""Unstable passes (a retry was needed) and quarantined cases in the reports: summary.json's lists,
the JUnit properties, the page's markers (docs/farm/quarantine.md)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from typing_extensions import TypedDict

from npu_hil.harness.report.records import QUARANTINED, TestRecord


class UnstableCase(TypedDict):
    """A pass that needed a retry, in summary.json's ``unstable.cases``."""

    nodeid: str
    board: str | None
    target: str | None
    reason: str
    retries: int


class Unstable(TypedDict):
    """summary.json's ``unstable``."""

    count: int
    cases: list[UnstableCase]


class Quarantine(TypedDict):
    """summary.json's ``quarantine``: each listed case is its id, board, target, outcome and
    message with its quarantine entry's keys (reason, expires, entry, link...)."""

    count: int
    listed: int
    now_passing: list[str]
    cases: list[dict[str, str | None]]


class StabilityEntries(TypedDict):
    """:func:`stability_summary`'s part of summary.json."""

    unstable: Unstable
    quarantine: Quarantine


def stability_properties(record: TestRecord) -> dict[str, str]:
    """JUnit properties: ``unstable`` (the first failure's reason) and ``quarantine.<key>``
    (reason, link, expires, entry, test) for a listed case."""
    props: dict[str, str] = {}
    if record.unstable:
        props["unstable"] = record.unstable
    for key, value in sorted(record.quarantine.items()):
        props[f"quarantine.{key}"] = value
    return props


def stability_summary(records: Sequence[TestRecord]) -> StabilityEntries:
    """summary.json's ``unstable`` and ``quarantine`` entries, each with a count and a list.

    ``quarantine.count`` is the failures the list kept from failing the run; ``now_passing``
    names the listed cases that passed (their entries can be removed)."""
    unstable: list[UnstableCase] = [
        {
            "nodeid": r.nodeid,
            "board": r.board,
            "target": r.target,
            "reason": r.unstable,
            "retries": len(r.retried),
        }
        for r in records
        if r.unstable
    ]
    listed: list[dict[str, str | None]] = [
        {
            "nodeid": r.nodeid,
            "board": r.board,
            "target": r.target,
            "outcome": r.outcome,
            "message": r.message,
            **r.quarantine,
        }
        for r in records
        if r.quarantine
    ]
    return {
        "unstable": {"count": len(unstable), "cases": unstable},
        "quarantine": {
            "count": sum(r.outcome == QUARANTINED for r in records),
            "listed": len(listed),
            "now_passing": [r.nodeid for r in records if r.quarantine and r.outcome == "passed"],
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
