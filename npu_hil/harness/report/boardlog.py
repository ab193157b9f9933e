"""The board's own logs (a record's ``board_log``: ``LogFinding.to_dict``) in the reports: JUnit
properties and ``<system-out>``, summary.json's ``board_logs``, the page's badge and excerpt."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from html import escape
from typing import Literal

from typing_extensions import TypedDict

from npu_hil.harness.report.records import LogExcerptDocument, TestRecord

LOGS: tuple[Literal["kernel"], Literal["runtime"]] = ("kernel", "runtime")


# Functional form: "class" is a keyword.
BoardLogCase = TypedDict(
    "BoardLogCase",
    {"nodeid": str, "board": str | None, "outcome": str, "class": str, "signatures": list[str]},
)
"""A classified case in summary.json's ``board_logs``."""


class BoardLogs(TypedDict):
    """summary.json's ``board_logs``: how many cases each class took, and those cases."""

    classes: dict[str, int]
    cases: list[BoardLogCase]


def _matched(record: TestRecord) -> list[dict[str, str]]:
    return [m for m in record.board_log.get("matches") or [] if isinstance(m, dict)]


def _excerpt(record: TestRecord, name: Literal["kernel", "runtime"]) -> LogExcerptDocument:
    return record.board_log.get(name) or LogExcerptDocument()


def board_log_properties(record: TestRecord) -> dict[str, str]:
    """``board_log.class`` and ``board_log.signatures`` (ids, comma-separated) of a classified
    case, ``board_log.attempts`` the attempts whose logs matched them (``1,2 of 2``) when the run
    was retried; ``board_log.kernel`` says how the kernel log was read (or why it was not)."""
    log = record.board_log
    if not log:
        return {}
    props: dict[str, str] = {}
    if log.get("class"):
        props["board_log.class"] = str(log["class"])
        props["board_log.signatures"] = ",".join(
            dict.fromkeys(str(m.get("id")) for m in _matched(record))
        )
        attempts = log.get("attempts")
        if isinstance(attempts, list) and log.get("of_attempts"):
            listed = ",".join(str(n) for n in attempts)
            props["board_log.attempts"] = f"{listed} of {log['of_attempts']}"
    kernel = log.get("kernel") or {}
    if kernel:
        source = str(kernel.get("source", ""))
        props["board_log.kernel"] = source + (f": {kernel['why']}" if kernel.get("why") else "")
    return props


def board_log_text(record: TestRecord) -> str:
    """The excerpt as plain text (JUnit's ``<system-out>``): each log's lines under a header."""
    log = record.board_log
    if not log:
        return ""
    parts = []
    if log.get("class"):
        parts.append(f"board log class: {log['class']}")
        parts += [
            f"  {m.get('id')} ({m.get('class')}): {m.get('meaning')} [{m.get('source')}]"
            for m in _matched(record)
        ]
    for name in LOGS:
        excerpt = _excerpt(record, name)
        lines = excerpt.get("lines") or []
        if not lines and not excerpt.get("why"):
            continue
        head = f"--- {name} log ({excerpt.get('source', '?')})"
        head += f": {excerpt['why']}" if excerpt.get("why") else ""
        head += f", {excerpt['dropped']} older lines dropped" if excerpt.get("dropped") else ""
        parts.append(head)
        parts += [str(line) for line in lines]
    return "\n".join(parts)


def board_log_summary(records: Sequence[TestRecord]) -> BoardLogs:
    """summary.json's ``board_logs``: how many cases each class took, and those cases."""
    cases: list[BoardLogCase] = [
        {
            "nodeid": r.nodeid,
            "board": r.board,
            "outcome": r.outcome,
            "class": r.board_log["class"],
            "signatures": sorted({str(m.get("id")) for m in _matched(r)}),
        }
        for r in records
        if r.board_log.get("class")
    ]
    return {"classes": dict(Counter(c["class"] for c in cases)), "cases": cases}


def board_log_html(record: TestRecord) -> str:
    """The class badge and the excerpt (folded, the matched lines marked), under the message."""
    log = record.board_log
    if not log:
        return ""
    matched = {str(m.get("line")) for m in _matched(record)}
    html = ""
    if log.get("class"):
        first = _matched(record)[0] if _matched(record) else {}
        html += (
            f'<div class="boardlog-why"><span class="b boardlog">{escape(str(log["class"]))}'
            f"</span> board log: {escape(str(first.get('id', '')))}: "
            f"{escape(str(first.get('meaning', '')))}</div>"
        )
    blocks = []
    for name in LOGS:
        excerpt = _excerpt(record, name)
        lines = [str(x) for x in excerpt.get("lines") or []]
        if not lines:
            continue
        body = "\n".join(
            f"<mark>{escape(line)}</mark>" if line in matched else escape(line) for line in lines
        )
        blocks.append(
            f"<details{' open' if log.get('class') else ''}><summary>{escape(name)} log "
            f"({escape(str(excerpt.get('source', '')))}, {len(lines)} lines)</summary>"
            f'<pre class="boardlog">{body}</pre></details>'
        )
    return html + "".join(blocks)


CSS = (
    ".boardlog{background:#ffe0cc;color:#7a2e00}.boardlog-why{color:#7a2e00}"
    "pre.boardlog{background:#faf6f2;color:#222;max-height:20em;overflow:auto}"
)
