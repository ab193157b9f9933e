"""report.html: one self-contained page (inline CSS and script, images as data URIs); what it
shows is in docs/farm/nightly.md ("Reading report.html"). The history section takes the view the
caller built (``npu_hil.harness.history.trends.trends_view``): this layer reads no history."""

from __future__ import annotations

import base64
import json
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_hil.harness.report.boardlog import CSS as BOARDLOG_CSS
from npu_hil.harness.report.boardlog import board_log_html
from npu_hil.harness.report.perf import latency_html
from npu_hil.harness.report.records import (
    NO_BOARD,
    OUTCOMES,
    QUARANTINED,
    TensorFinding,
    TestRecord,
)
from npu_hil.harness.report.stability import CSS as STABILITY_CSS
from npu_hil.harness.report.stability import stability_badges, stability_notes

if TYPE_CHECKING:
    from npu_hil.harness.history.flaky import StripCell
    from npu_hil.harness.history.trends import CaseRow, Highlight, Highlighted, TrendsView
    from npu_hil.harness.report.writer import CaseTexts

# report.html's style and filters, files of their own so they read and lint as what they are.
CSS = (files("npu_hil.harness.report") / "report.css").read_text(encoding="utf-8")
SCRIPT = (files("npu_hil.harness.report") / "report.js").read_text(encoding="utf-8")

_ORDER = {"failed": 1, "error": 1, "skipped": 3, "passed": 4}
NO_LAYOUT = "(none)"


def _badge(text: str, cls: str) -> str:
    return f'<span class="b {escape(cls)}">{escape(text)}</span>'


def embed_png(run_dir: Path, relative: str) -> str | None:
    """A ``data:`` URI of the PNG at ``run_dir / relative``, or None when it is missing."""
    path = run_dir / relative
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _tensor_html(run_dir: Path, tensor: TensorFinding) -> str:
    parts = [
        f"<div><b>{escape(tensor.role)} {escape(tensor.name)}</b>: {escape(tensor.verdict)}",
        f"<pre>{escape(tensor.summary)}</pre>" if tensor.summary else "",
    ]
    if tensor.accuracy:
        # Beside the byte verdict: how far the dequantized output is from the float reference.
        parts.append(f'<div class="accuracy">accuracy: {escape(tensor.accuracy_text())}</div>')
    elif tensor.accuracy_note:
        parts.append(f'<div class="muted">accuracy: {escape(tensor.accuracy_note)}</div>')
    for found, head in (
        (tensor.accuracy_breaches, '<div class="failed">accuracy thresholds failed:'),
        (tensor.attribute_findings, "<div>attribute findings:"),
    ):
        if found:
            parts.append(f"{head}<ul>{''.join(f'<li>{escape(f)}</li>' for f in found)}</ul></div>")
    if tensor.heatmap:
        uri = embed_png(run_dir, tensor.heatmap)
        if uri is None:
            parts.append(f'<div class="muted">heatmap {escape(tensor.heatmap)} missing</div>')
        else:
            alt = f"heatmap of {tensor.name}"
            parts.append(
                f'<img class="heat" alt="{escape(alt)}" src="{uri}"><div class="muted">'
                f'<a href="{escape(tensor.heatmap)}">{escape(tensor.heatmap)}</a></div>'
            )
    parts.append("</div>")
    return "".join(parts)


def provenance_banner(summary: Mapping[str, Any]) -> str:
    sim, hw = int(summary["simulated"]), int(summary["hardware"])
    not_run = int(summary.get("not_run", 0))
    rest = f"; {not_run} ran on no board (skipped, or no board to run on)" if not_run else ""
    if hw == 0 and sim == 0:
        return f'<div class="banner warn">NOTHING RAN on a board{escape(rest)}</div>'
    if hw == 0:
        text = f"SIMULATED: all {sim} tests that ran, ran on simulated boards{rest}"
        return f'<div class="banner">{escape(text)}</div>'
    if sim == 0:
        text = f"HARDWARE: all {hw} tests that ran, ran on real boards{rest}"
        return f'<div class="banner hwonly">{escape(text)}</div>'
    text = f"MIXED: {hw} tests on hardware (HW), {sim} on simulated boards (SIM){rest}"
    return f'<div class="banner mixed">{escape(text)}</div>'


def _links(run_dir: Path) -> str:
    links = [
        f'<a href="{name}">{name}</a>'
        for name in ("junit.xml", "pytest.log", "summary.json", "comparison.json", "records.jsonl")
        if name in ("junit.xml", "summary.json", "comparison.json") or (run_dir / name).exists()
    ]
    return f"<p>files: {' · '.join(links)}</p>"


def _duration(meta: Mapping[str, Any]) -> str:
    seconds = meta.get("duration_s")
    if not isinstance(seconds, (int, float)):
        return ""
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{seconds:.1f} s"


def _sim_fault_text(item: Mapping[str, Any]) -> str:
    """``{"board": b, "fault": {"name": n, **params}}`` as ``--sim-fault`` spells it."""
    fault = dict(item.get("fault") or {})
    name = fault.pop("name", "?")
    params = ",".join(f"{k}={v}" for k, v in fault.items())
    return f"{item.get('board', '?')}={name}" + (f":{params}" if params else "")


def _meta_table(summary: Mapping[str, Any]) -> str:
    meta = summary.get("meta", {})
    rows = [
        ("harness version", meta.get("harness_version", "")),
        ("git commit", meta.get("git_commit", "")),
        ("launched by", meta.get("launched_by", "")),
        ("command line", meta.get("command_line") or " ".join(map(str, meta.get("argv", [])))),
        ("started", meta.get("started", "")),
        ("finished", meta.get("finished", "")),
        ("duration", _duration(meta)),
        ("inventory", meta.get("inventory", "")),
        ("backend", meta.get("backend", "")),
        ("python", meta.get("python", "")),
        ("pytest exit", meta.get("pytest_exit", "")),
        ("complete", {True: "yes", False: "no (stopped early)"}.get(meta.get("complete"), "")),
        ("run key", meta.get("run_key", "")),
        # --sim-fault: a rigged run says so where its provenance is read
        ("simulated faults", "; ".join(_sim_fault_text(f) for f in meta.get("sim_faults") or [])),
    ]
    cells = "".join(
        f"<tr><th>{escape(k)}</th><td><code>{escape(str(v))}</code></td></tr>"
        for k, v in rows
        if v not in ("", None)
    )
    versions = [
        f"<tr><td>{escape(board)}</td><td>"
        f"{escape(', '.join(f'{k} {v}' for k, v in sorted(runtime.items())))}</td></tr>"
        for board, entry in summary["per_board"].items()
        if (runtime := entry.get("runtime_versions"))
    ]
    table = f"<table>{cells}</table>"
    if versions:
        table += (
            "<details><summary>runtime versions per board</summary><table>"
            f"<tr><th>board</th><th>versions</th></tr>{''.join(versions)}</table></details>"
        )
    return table


def _header(run_dir: Path, summary: Mapping[str, Any]) -> str:
    meta = summary.get("meta", {})
    outcomes = summary["outcomes"]
    counts = " ".join(_badge(f"{outcomes.get(o, 0)} {o}", o) for o in OUTCOMES)
    for what in (QUARANTINED, "unstable"):
        count = outcomes.get(what) or (summary.get(what) or {}).get("count", 0)
        counts += f" {_badge(f'{count} {what}', what)}" if count else ""
    failure = summary.get("run_failure")
    failed = (
        f'<div class="banner failrun">FAILED RUN: {escape(str(failure))}</div>' if failure else ""
    )
    failed += "".join(
        f'<div class="banner warn">WARNING: {escape(str(warning))}</div>'
        for warning in summary.get("run_warnings") or []
    )
    return (
        f"<h1>npu-hil run {escape(str(meta.get('run_id', '')))}</h1>{failed}"
        f"{provenance_banner(summary)}"
        f"<p>{summary['total']} tests: {counts}</p>{_links(run_dir)}{_meta_table(summary)}"
    )


def _health(summary: Mapping[str, Any]) -> str:
    health = summary.get("board_health") or {}
    if not health and not summary.get("health_history"):
        return (
            '<h2 id="health">Board health</h2><p class="muted">Every board answered: no '
            "fallback to a simulated board, no unreachable board, no power cycle.</p>"
        )
    rows = [
        f"<tr><td>{escape(board)}</td><td>{escape(str(event['event']))}</td>"
        f"<td>{int(event['cases'])}</td></tr>"
        for board, events in health.items()
        for event in events
    ] + [
        f"<tr><td>{escape(board)}</td><td>{escape(str(event.get('time')))} "
        f"{escape(str(event.get('state')))}: {escape(str(event.get('what')))} "
        f"{escape(str(event.get('cause')))[:300]}</td><td>run</td></tr>"
        for board, kept in (summary.get("health_history") or {}).items()
        for event in (kept.get("history") or [])[-5:]  # the latest events across runs
    ]
    return (
        '<h2 id="health">Board health</h2><table class="health"><tr><th>board</th>'
        f"<th>what happened</th><th>cases</th></tr>{''.join(rows)}</table>"
    )


def _incomplete_banner(comparison: Mapping[str, Any]) -> str:
    """A run of the same kind that did not finish is said, never silently skipped."""
    entries = comparison.get("previous_incomplete") or []
    if not entries:
        return ""
    items = "".join(
        f"<li><code>{escape(str(e.get('run_id')))}</code>: {escape(str(e.get('why')))}</li>"
        for e in entries[:20]
    )
    return (
        '<div class="banner warn incomplete">INCOMPLETE earlier run of this kind (it did not '
        f"finish, so it is no full baseline):<ul>{items}</ul></div>"
    )


def _comparison(comparison: Mapping[str, Any]) -> str:
    previous = comparison.get("previous_run")
    how = str(comparison.get("baseline", ""))
    if previous is None:
        return (
            '<h2 id="compare">Since the previous run</h2>'
            f"<p class='muted'>No comparison: {escape(how or 'no earlier run')}.</p>"
            f"{_incomplete_banner(comparison)}"
        )
    when = comparison.get("previous_started") or "?"
    commit = comparison.get("previous_commit")
    html = [
        f'<h2 id="compare">Since {escape(str(previous))}</h2><p class="baseline">Compared with '
        f"run <code>{escape(str(previous))}</code>, started {escape(str(when))}"
        + (f", commit <code>{escape(str(commit))}</code>" if commit else "")
        + f": {escape(how)}.</p>"
        + _incomplete_banner(comparison)
    ]
    for key, title in (
        ("new_failures", "New failures"),
        ("fixed", "Fixed"),
        ("still_failing", "Still failing"),
        ("flaky", "Flaky (flipped more than once in the last runs)"),
    ):
        entries = comparison.get(key, [])
        html.append(f"<h3>{title}: {len(entries)}</h3>")
        if entries:
            items = []
            for entry in entries[:200]:
                extra = entry.get("history") or [entry.get("previous"), entry.get("outcome")]
                trail = " → ".join(str(o) if o else "—" for o in extra)
                items.append(f"<li><code>{escape(entry['nodeid'])}</code> ({escape(trail)})</li>")
            more = f"<li>… and {len(entries) - 200} more</li>" if len(entries) > 200 else ""
            html.append(f"<ul>{''.join(items)}{more}</ul>")
    return "".join(html)


def _trend(board: str, trend: Sequence[Mapping[str, Any]]) -> str:
    marks = []
    for run in trend:
        counts = run.get("per_board", {}).get(board)
        if not counts:
            cls, text = "t-none", "not in this run"
        else:
            bad = counts.get("failed", 0) + counts.get("error", 0)
            cls = "t-fail" if bad else "t-pass" if counts.get("passed", 0) else "t-none"
            text = ", ".join(f"{counts.get(o, 0)} {o}" for o in OUTCOMES)
        marks.append(
            f'<span class="{cls}" title="{escape(str(run.get("run_id")))}: {text}"></span>'
        )
    return f'<span class="trend">{"".join(marks)}</span>'


def _boards(summary: Mapping[str, Any], comparison: Mapping[str, Any]) -> str:
    trend = comparison.get("trend") or []
    rows = []
    for board, entry in summary["per_board"].items():
        bad = entry.get("failed", 0) + entry.get("error", 0)
        cells = "".join(f"<td>{entry.get(o, 0)}</td>" for o in OUTCOMES)
        kind = str(entry.get("kind", "-"))
        css = {"HW": "hw", "SIM": "sim", "HW+SIM": "mixedb"}.get(kind, "none")
        kind = "" if board == NO_BOARD else _badge(kind, css)
        link = f'<a href="#board={escape(board)}">{escape(board)}</a>'
        rows.append(
            f'<tr class="{"row-failed" if bad else ""}"><td>{link}</td>'
            f"<td>{escape(str(entry.get('target') or ''))}</td><td>{kind}</td>{cells}"
            f"<td>{_trend(board, trend)}</td></tr>"
        )
    head = "".join(f"<th>{o}</th>" for o in OUTCOMES)
    return (
        '<h2 id="boards">Boards</h2><table class="boards"><tr><th>board</th><th>target</th>'
        f"<th>ran on</th>{head}<th>last {len(trend)} runs</th></tr>{''.join(rows)}</table>"
    )


def _matrix(records: Sequence[TestRecord]) -> str:
    cells: dict[tuple[str, str], dict[str, int]] = {}
    for r in records:
        key = (r.board or NO_BOARD, r.layout or NO_LAYOUT)
        counts = cells.setdefault(key, dict.fromkeys(OUTCOMES, 0))
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    boards = sorted({b for b, _ in cells})
    layouts = sorted({la for _, la in cells})
    head = "".join(f"<th>{escape(la)}</th>" for la in layouts)
    rows = []
    for board in boards:
        tds = []
        for layout in layouts:
            found = cells.get((board, layout))
            if found is None:
                tds.append("<td></td>")
                continue
            counts = found
            bad = counts["failed"] + counts["error"]
            cls = "cell-fail" if bad else "cell-pass" if counts["passed"] else "cell-skip"
            text = f"{bad} ✗" if bad else str(counts["passed"]) if counts["passed"] else "skip"
            title = ", ".join(f"{n} {o}" for o, n in counts.items() if n)
            href = f"#board={board}&layout={layout}"
            tds.append(
                f'<td class="{cls}" data-board="{escape(board)}" data-layout="{escape(layout)}" '
                f'title="{escape(title)}"><a href="{escape(href)}">{escape(text)}</a></td>'
            )
        rows.append(f"<tr><th>{escape(board)}</th>{''.join(tds)}</tr>")
    return (
        '<h2 id="matrix">Board &times; layout</h2><div class="scroll"><table class="matrix">'
        "<tr><th>board \\ layout</th>"
        f"{head}</tr>{''.join(rows)}</table></div>"
    )


# The history view and the regressions: plain data handed over by the caller.
MAX_REGRESSIONS = 500


def _figure(value: Any, unit: str = "", digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, (int, float)) and math.isinf(value):
        return "exact" if value > 0 else "-inf"
    if isinstance(value, (int, float)):
        return f"{value:.{digits}g}{unit}"
    return escape(str(value))


def _percent(value: float | None) -> str:
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
    counts = Counter(i.get("severity") for i in found)
    head = (
        f"{len(found)} outside their baseline band: {counts['failure']} failing, "
        f"{counts['warning']} warnings, {counts['noisy']} on a noisy board (reported, never "
        "failing)"
    )
    return (
        f'<h2 id="regressions">Regressions</h2><p>{escape(head)}</p><table class="regressions">'
        "<tr><th>severity</th><th>board</th><th>test</th><th>figure</th><th>value</th>"
        f"<th>band</th><th>message</th></tr>{''.join(rows)}</table>{tail}"
    )


def _strip(entries: Sequence[StripCell]) -> str:
    marks = []
    for entry in entries:
        outcome = entry["outcome"]
        cls = f"s-{outcome}" if outcome else "s-absent"
        title = f"{entry['run_id']}: {outcome or 'not in this run'}"
        marks.append(f'<span class="{escape(cls)}" title="{escape(title)}"></span>')
    return f'<span class="strip">{"".join(marks)}</span>'


def _img(uri: str | None, alt: str) -> str:
    if uri is None or not uri.startswith("data:image/png;base64,"):
        return ""
    return f'<img class="trend" alt="{escape(alt)}" src="{uri}">'


def _case_row(case: CaseRow) -> str:
    since = case["failing_since"]
    since_text = (
        f"<code>{escape(since)}</code> {escape(case['failing_since_started'])}" if since else "—"
    )
    flips = case["flips"]
    return (
        f'<tr class="hist-case{" row-failed" if since else ""}">'
        f"<td><code>{escape(case['nodeid'])}</code></td>"
        f"<td>{_strip(case['strip'])}</td><td>{since_text}</td>"
        f"<td>{_percent(case['flakiness'])} ({flips} flip{'s' if flips != 1 else ''})</td>"
        f"<td>{_percent(case['pass_rate'])}</td>"
        f"<td>{_figure(case['latency_last_ms'], ' ms')}</td>"
        f"<td>{_figure(case['latency_median_ms'], ' ms')}</td>"
        f"<td>{_figure(case['snr_last_db'], ' dB')}</td></tr>"
    )


_CASE_HEAD = (
    "<tr><th>test</th><th>last outcomes (oldest → newest)</th><th>failing since</th>"
    "<th>flakiness</th><th>pass rate</th><th>p50 last</th><th>p50 median</th><th>SNR last</th></tr>"
)


def _outcome(outcome: str) -> str:
    return escape(outcome) if outcome else "not run"


def _highlight_list(title: str, found: Highlighted, describe: Callable[[Highlight], str]) -> str:
    cases, total = found["cases"], found["total"]
    if not total:
        return f"<p><b>{escape(title)}</b>: none.</p>"
    items = "".join(
        f"<li><code>{escape(c['nodeid'])}</code> on "
        f"{escape(c['board']) or NO_BOARD}: {describe(c)}</li>"
        for c in cases
    )
    more = total - len(cases)
    tail = f"<li class='muted'>… and {more} more</li>" if more > 0 else ""
    return f"<p><b>{escape(title)}</b> ({total}):</p><ul class='highlights'>{items}{tail}</ul>"


def _lead(found: Mapping[str, Highlighted]) -> str:
    """The three lists the section opens with: changed in the last run, failing, flipping."""
    return (
        _highlight_list(
            "Changed in the last run",
            found["changed"],
            lambda c: f"{_outcome(c['before'])} → {_outcome(c['now'])}",
        )
        + _highlight_list(
            "Failing now",
            found["failing"],
            lambda c: f"since <code>{escape(str(c['failing_since']))}</code>",
        )
        + _highlight_list(
            "Flipping (more than once)", found["flipping"], lambda c: f"{c['flips']} flips"
        )
    )


def history_section(view: TrendsView | None) -> str:
    """The trends of the runs of this kind, or nothing when no view was handed over: what
    changed, fails and flips first; the per-board plots and case table folded below."""
    if not view:
        return ""
    runs = view["runs"]
    parts = [
        '<h2 id="history">History</h2>',
        f"<p>The last {len(runs)} complete run{'s' if len(runs) != 1 else ''} of this kind"
        + (f" ({escape(runs[0]['started'])} to {escape(runs[-1]['started'])})" if runs else "")
        + f": {view['cases_total']} cases.</p>",
    ]
    if len(runs) < 2:
        parts.append(
            "<p class='muted one-run'>One run so far: changes, flips and trend plots begin "
            "with the next run of this kind.</p>"
        )
    else:
        parts.append(_lead(view["highlights"]))
    boards = view["boards"]
    if boards:
        parts.append(
            f"<details class='hist-all'><summary>Every case, board by board ({len(boards)} "
            f"board{'s' if len(boards) != 1 else ''})</summary>"
        )
    for board in boards:
        name, cases = board["board"], board["cases"]
        parts.append(
            f'<h3 class="hist-board">{escape(name or NO_BOARD)}</h3><p class="muted">'
            f"{board['cases_total']} cases, {board['failing']} failing "
            f"now, {board['flaky']} flaky (flipped more than once)</p>"
        )
        parts.append(
            _img(board["latency_png"], f"latency p50 per case on {name}")
            + _img(board["pass_rate_png"], f"pass rate on {name}")
        )
        if cases:
            rows = "".join(_case_row(c) for c in cases)
            parts.append(
                f'<div class="scroll"><table class="history">{_CASE_HEAD}{rows}</table></div>'
            )
    if boards:
        parts.append("</details>")
    omitted_boards, omitted_cases = view["omitted_boards"], view["omitted_cases"]
    if omitted_boards or omitted_cases:
        parts.append(
            f'<p class="muted omitted">Not drawn, to keep the page small: {omitted_boards} more '
            f"board{'s' if omitted_boards != 1 else ''} and {omitted_cases} more "
            f"case{'s' if omitted_cases != 1 else ''} (failing and flaky cases are drawn first; "
            "<code>npu-hil history</code> lists them all).</p>"
        )
    return "".join(parts)


def _select(key: str, label: str, values: Sequence[str]) -> str:
    options = "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)
    return (
        f'<label>{label} <select id="f-{key}"><option value="">all</option>{options}'
        "</select></label>"
    )


def _filters(records: Sequence[TestRecord]) -> str:
    def values(get: Any) -> list[str]:
        return sorted({str(get(r)) for r in records})

    return (
        '<div class="filters" id="filters">'
        + _select("board", "board", values(lambda r: r.board or NO_BOARD))
        + _select("target", "target", values(lambda r: r.target or ""))
        + _select("layout", "layout", values(lambda r: r.layout or NO_LAYOUT))
        + _select("outcome", "outcome", [*OUTCOMES, QUARANTINED])
        + _select("prov", "ran on", ["hw", "sim", "none"])
        + '<label>search <input id="f-q" type="search" placeholder="test id or message">'
        '</label><button id="f-reset" type="button">reset</button> <span id="count"></span></div>'
    )


def folded(record: TestRecord) -> bool:
    """Whether the page shows the case folded (passed, skipped, quarantined) or open."""
    return record.outcome not in ("failed", "error")


def _folded(title: str, text: str) -> str:
    return f"<details><summary>{escape(title)}</summary><pre>{escape(text)}</pre></details>"


def _row(run_dir: Path, r: TestRecord, new: set[str], folded: bool, texts: CaseTexts | None) -> str:
    before, after = (
        texts.html_row(run_dir, r, folded) if texts is not None else row_parts(run_dir, r, folded)
    )
    flag = " " + _badge("NEW", "new") if r.nodeid in new else ""
    return before + flag + after


def row_parts(run_dir: Path, r: TestRecord, folded: bool) -> tuple[str, str]:
    """A case's table row in two parts, around the place of its "NEW" badge (which depends
    on the run it is compared with, known only at the end)."""
    detail = ""
    if not folded:
        detail = "".join(_tensor_html(run_dir, t) for t in r.tensors)
        if r.longrepr:
            detail += _folded("traceback", r.longrepr)
        if r.boot_log:
            detail += _folded("boot log", r.boot_log)
    board = r.board or NO_BOARD
    data = {
        "board": board,
        "target": r.target or "",
        "layout": r.layout or NO_LAYOUT,
        "outcome": r.outcome,
        "prov": r.provenance or "none",
        "q": f"{r.nodeid} {r.message}".lower(),
        "folded": "1" if folded else "0",
    }
    attrs = " ".join(f'data-{k}="{escape(v)}"' for k, v in data.items())
    ran = _badge(r.provenance.upper(), r.provenance) if r.provenance in ("hw", "sim") else ""
    message = f"<div>{escape(r.message)}</div>" if r.message else ""
    message += stability_notes(r) + board_log_html(r) + latency_html(r)
    if folded:  # a passing case keeps its accuracy figures in view (the details are folded)
        message += "".join(
            f'<div class="muted">accuracy {escape(t.name)}: {escape(t.accuracy_text())}</div>'
            for t in r.tensors
            if t.accuracy
        )
    # Shown folded or not: how the vendor took the declared pixels; that a changed test's
    # figures start afresh, not compared; which API paths were compared, or why none were.
    for note in (r.preprocessing, r.baseline_note, r.cross_api):
        if note:
            lines = "<br>".join(escape(line) for line in note.splitlines())
            message += f'<div class="muted">{lines}</div>'
    if r.retried:  # shown folded or not: a pass that needed a retry is worth a look
        message += _folded(f"retried {len(r.retried)}x after", "\n".join(r.retried))
    return (
        f'<tr class="case row-{escape(r.outcome)}" {attrs}><td>{_badge(r.outcome, r.outcome)}'
        f"{stability_badges(r)}",
        f"</td><td>{ran or _badge('-', 'none')}</td><td>{escape(board)}</td>"
        f"<td>{escape(r.layout)}</td><td><code>{escape(r.nodeid)}</code>{message}{detail}</td>"
        f"<td>{r.duration_s:.2f}s</td></tr>",
    )


_HEAD = (
    "<tr><th>outcome</th><th>ran on</th><th>board</th><th>layout</th><th>test</th>"
    "<th>time</th></tr>"
)


def _tests(
    run_dir: Path, records: Sequence[TestRecord], new: set[str], texts: CaseTexts | None
) -> str:
    ordered = sorted(
        records, key=lambda r: (0 if r.nodeid in new else _ORDER.get(r.outcome, 2), r.nodeid)
    )
    open_rows = [r for r in ordered if not folded(r)]
    closed = [r for r in ordered if folded(r)]
    skipped = sum(r.outcome == "skipped" for r in closed)
    quarantined = sum(r.outcome == QUARANTINED for r in closed)
    first = "".join(_row(run_dir, r, new, False, texts) for r in open_rows)
    rest = "".join(_row(run_dir, r, new, True, texts) for r in closed)
    failures = (
        f'<table class="cases" id="failures">{_HEAD}{first}</table>'
        if open_rows
        else "<p>No failures, no errors.</p>"
    )
    return (
        f'<h2 id="tests">Tests</h2>{_filters(records)}'
        f"<h3>Failures and errors: {len(open_rows)}</h3>"
        f'{failures}<details id="folded"><summary>Passed and skipped: '
        f"{len(closed) - skipped - quarantined} passed, {skipped} skipped"
        f"{f', {quarantined} quarantined' if quarantined else ''} (collapsed)</summary>"
        f'<table class="cases" id="passes">{_HEAD}{rest}</table></details>'
    )


def build_html(
    run_dir: Path,
    records: Sequence[TestRecord],
    summary: Mapping[str, Any],
    comparison: Mapping[str, Any],
    history: TrendsView | None = None,
    texts: CaseTexts | None = None,
) -> str:
    """The page; ``history``: the view of the runs of this kind, if any; ``texts``: the cases'
    rows made as they arrived, if any."""
    new = {e["nodeid"] for e in comparison.get("new_failures", [])}
    title = f"npu-hil {summary.get('meta', {}).get('run_id', '')}"
    # </script> inside a script would end it: the script is a constant without one, and the
    # meta's JSON has its "<" escaped.
    assert "</" not in SCRIPT
    meta = json.dumps(summary.get("meta", {}), default=str).replace("<", "\\u003c")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(str(title))}</title><style>{CSS}{STABILITY_CSS}{BOARDLOG_CSS}</style>"
        f"<script>{SCRIPT}</script></head><body>"
        f"{_header(run_dir, summary)}{_health(summary)}{regressions_section(summary)}"
        f"{_comparison(comparison)}{_boards(summary, comparison)}{history_section(history)}"
        f"{_matrix(records)}"
        f"{_tests(run_dir, records, new, texts)}"
        f'<script type="application/json" id="meta">{meta}'
        "</script></body></html>\n"
    )
