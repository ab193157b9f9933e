"""The report page's "Regressions" and "History" sections.

Both take plain data: the regressions are summary.json's ``regressions`` (each with board,
nodeid, metric, value, band, severity and message); the history view is built by the caller
from the history store (``npu_hil.harness.history.trends.trends_view``: runs, boards with their
plots as PNG data URIs, a row per case, and what was left out), so this layer reads no history
itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

CSS = """
.strip{white-space:nowrap}.strip span{display:inline-block;width:9px;height:14px;margin-right:1px;
border-radius:2px}
.strip .s-passed{background:#4caf50}.strip .s-failed,.strip .s-error{background:#e53935}
.strip .s-skipped{background:#bdbdbd}.strip .s-absent{background:#f1f1f1;border:1px solid #ddd}
img.trend{border:1px solid #ddd;margin:.3em .5em .3em 0}.sev-failure{color:#8a1111;
font-weight:700}.sev-warning{color:#7a4500;font-weight:600}.sev-noisy{color:#555}
"""

MAX_REGRESSIONS = 500


def _figure(value: Any, unit: str = "", digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, (int, float)) and math.isinf(value):
        return "exact" if value > 0 else "-inf"
    if isinstance(value, (int, float)):
        return f"{value:.{digits}g}{unit}"
    return escape(str(value))


def _percent(value: Any) -> str:
    return "—" if value is None else f"{100 * float(value):.0f}%"


def regressions_section(summary: Mapping[str, Any]) -> str:
    """Every regression finding of the run, or nothing when the summary has none."""
    found = summary.get("regressions") or []
    if not found:
        return ""
    rows = []
    for item in found[:MAX_REGRESSIONS]:
        severity = str(item.get("severity", ""))
        band = item.get("band") or {}
        band_text = (
            f"{_figure(band.get('low'))}..{_figure(band.get('high'))} "
            f"(median {_figure(band.get('median'))}, {len(band.get('runs') or [])} runs)"
            if band
            else ""
        )
        rows.append(
            f'<tr class="regression"><td class="sev-{escape(severity)}">{escape(severity)}</td>'
            f"<td>{escape(str(item.get('board', '')))}</td>"
            f"<td><code>{escape(str(item.get('nodeid', '')))}</code></td>"
            f"<td>{escape(str(item.get('metric', '')))}</td><td>{_figure(item.get('value'))}</td>"
            f"<td>{escape(band_text)}</td><td>{escape(str(item.get('message', '')))}</td></tr>"
        )
    more = len(found) - MAX_REGRESSIONS
    tail = f"<p class='muted'>… and {more} more (summary.json has them all)</p>" if more > 0 else ""
    counts = {s: sum(1 for i in found if i.get("severity") == s) for s in ("failure", "warning")}
    noisy = sum(1 for i in found if i.get("severity") == "noisy")
    head = (
        f"{len(found)} outside their baseline band: {counts['failure']} failing, "
        f"{counts['warning']} warnings, {noisy} on a noisy board (reported, never failing)"
    )
    return (
        f'<h2 id="regressions">Regressions</h2><p>{escape(head)}</p><table class="regressions">'
        "<tr><th>severity</th><th>board</th><th>test</th><th>figure</th><th>value</th>"
        f"<th>band</th><th>message</th></tr>{''.join(rows)}</table>{tail}"
    )


def _strip(entries: Sequence[Mapping[str, Any]]) -> str:
    marks = []
    for entry in entries:
        outcome = str(entry.get("outcome") or "")
        cls = f"s-{outcome}" if outcome else "s-absent"
        title = f"{entry.get('run_id')}: {outcome or 'not in this run'}"
        marks.append(f'<span class="{escape(cls)}" title="{escape(title)}"></span>')
    return f'<span class="strip">{"".join(marks)}</span>'


def _img(uri: Any, alt: str) -> str:
    if not isinstance(uri, str) or not uri.startswith("data:image/png;base64,"):
        return ""
    return f'<img class="trend" alt="{escape(alt)}" src="{uri}">'


def _case_row(case: Mapping[str, Any]) -> str:
    since = case.get("failing_since")
    since_text = (
        f"<code>{escape(str(since))}</code> {escape(str(case.get('failing_since_started', '')))}"
        if since
        else "—"
    )
    flips = int(case.get("flips") or 0)
    return (
        f'<tr class="hist-case{" row-failed" if since else ""}">'
        f"<td><code>{escape(str(case.get('nodeid', '')))}</code></td>"
        f"<td>{_strip(case.get('strip') or [])}</td><td>{since_text}</td>"
        f"<td>{_percent(case.get('flakiness'))} ({flips} flip{'s' if flips != 1 else ''})</td>"
        f"<td>{_percent(case.get('pass_rate'))}</td>"
        f"<td>{_figure(case.get('latency_last_ms'), ' ms')}</td>"
        f"<td>{_figure(case.get('latency_median_ms'), ' ms')}</td>"
        f"<td>{_figure(case.get('snr_last_db'), ' dB')}</td></tr>"
    )


_CASE_HEAD = (
    "<tr><th>test</th><th>last outcomes (oldest → newest)</th><th>failing since</th>"
    "<th>flakiness</th><th>pass rate</th><th>p50 last</th><th>p50 median</th><th>SNR last</th></tr>"
)


def _outcome(outcome: Any) -> str:
    return escape(str(outcome)) if outcome else "not run"


def _highlight_list(title: str, found: Mapping[str, Any] | None, describe: Any) -> str:
    cases = (found or {}).get("cases") or []
    total = int((found or {}).get("total", 0))
    if not total:
        return f"<p><b>{escape(title)}</b>: none.</p>"
    items = "".join(
        f"<li><code>{escape(str(c.get('nodeid', '')))}</code> on "
        f"{escape(str(c.get('board', '')) or '(no board)')}: {describe(c)}</li>"
        for c in cases
    )
    more = total - len(cases)
    tail = f"<li class='muted'>… and {more} more</li>" if more > 0 else ""
    return f"<p><b>{escape(title)}</b> ({total}):</p><ul class='highlights'>{items}{tail}</ul>"


def _lead(view: Mapping[str, Any]) -> str:
    """The three lists the section opens with: changed in the last run, failing, flipping."""
    found = view.get("highlights") or {}
    return (
        _highlight_list(
            "Changed in the last run",
            found.get("changed"),
            lambda c: f"{_outcome(c.get('before'))} → {_outcome(c.get('now'))}",
        )
        + _highlight_list(
            "Failing now",
            found.get("failing"),
            lambda c: f"since <code>{escape(str(c.get('failing_since', '')))}</code>",
        )
        + _highlight_list(
            "Flipping (more than once)",
            found.get("flipping"),
            lambda c: f"{int(c.get('flips') or 0)} flips",
        )
    )


def history_section(view: Mapping[str, Any] | None) -> str:
    """The trends of the runs of this kind, or nothing when no view was handed over: what
    changed, fails and flips first; the per-board plots and case table folded below."""
    if not view:
        return ""
    runs = view.get("runs") or []
    first = runs[0].get("started", "") if runs else ""
    last = runs[-1].get("started", "") if runs else ""
    parts = [
        '<h2 id="history">History</h2>',
        f"<p>The last {len(runs)} complete run{'s' if len(runs) != 1 else ''} of this kind"
        + (f" ({escape(str(first))} to {escape(str(last))})" if runs else "")
        + f": {int(view.get('cases_total', 0))} cases.</p>",
    ]
    if len(runs) < 2:
        parts.append(
            "<p class='muted one-run'>One run so far: changes, flips and trend plots begin "
            "with the next run of this kind.</p>"
        )
    else:
        parts.append(_lead(view))
    boards = view.get("boards") or []
    if boards:
        parts.append(
            f"<details class='hist-all'><summary>Every case, board by board ({len(boards)} "
            f"board{'s' if len(boards) != 1 else ''})</summary>"
        )
    for board in boards:
        name = str(board.get("board", ""))
        cases = board.get("cases") or []
        parts.append(
            f'<h3 class="hist-board">{escape(name or "(no board)")}</h3><p class="muted">'
            f"{int(board.get('cases_total', 0))} cases, {int(board.get('failing', 0))} failing "
            f"now, {int(board.get('flaky', 0))} flaky (flipped more than once)</p>"
        )
        parts.append(
            _img(board.get("latency_png"), f"latency p50 per case on {name}")
            + _img(board.get("pass_rate_png"), f"pass rate on {name}")
        )
        if cases:
            rows = "".join(_case_row(c) for c in cases)
            parts.append(
                f'<div class="scroll"><table class="history">{_CASE_HEAD}{rows}</table></div>'
            )
    if boards:
        parts.append("</details>")
    omitted_boards = int(view.get("omitted_boards", 0))
    omitted_cases = int(view.get("omitted_cases", 0))
    if omitted_boards or omitted_cases:
        parts.append(
            f'<p class="muted omitted">Not drawn, to keep the page small: {omitted_boards} more '
            f"board{'s' if omitted_boards != 1 else ''} and {omitted_cases} more "
            f"case{'s' if omitted_cases != 1 else ''} (failing and flaky cases are drawn first; "
            "<code>npu-hil history</code> lists them all).</p>"
        )
    return "".join(parts)
