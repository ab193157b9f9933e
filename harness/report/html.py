"""report.html: one self-contained page (inline CSS, heatmaps as data URIs, no scripts).

Order on the page: the header with the counts and the simulated/hardware split, the comparison
with the previous run, the per-board table, then every test, new failures first. Every test row
says SIM or HW, so a simulated result is never read as a hardware one.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from harness.report.records import TensorFinding, TestRecord

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{margin:0 0 .3em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f3f3f3}
.b{display:inline-block;padding:1px 7px;border-radius:3px;font-weight:600;font-size:12px}
.passed{background:#d8f5d8;color:#135c13}.failed{background:#fbd5d5;color:#8a1111}
.error{background:#ffe3b3;color:#7a4500}.skipped{background:#e6e6e6;color:#555}
.sim{background:#dbe7ff;color:#1a3f8a}.hw{background:#3a3a3a;color:#fff}
.new{background:#8a1111;color:#fff}.banner{padding:.6em 1em;margin:.6em 0;border-radius:4px;
background:#dbe7ff;color:#1a3f8a;font-weight:600}.banner.mixed{background:#fff4c2;color:#6b5200}
.banner.hwonly{background:#3a3a3a;color:#fff}
pre{background:#f7f7f7;padding:.5em;overflow-x:auto;white-space:pre-wrap;margin:.3em 0}
img.heat{max-width:100%;border:1px solid #ccc;margin:.3em 0}.muted{color:#777}
tr.row-failed td,tr.row-error td{background:#fff8f8}
"""

_ORDER = {"failed": 1, "error": 1, "skipped": 3, "passed": 4}


def _badge(text: str, cls: str) -> str:
    return f'<span class="b {escape(cls)}">{escape(text)}</span>'


NO_BOARD = "(no board)"  # summary.json's row for cases no board of the inventory serves


def _sim_badge(simulated: bool) -> str:
    return _badge("SIM", "sim") if simulated else _badge("HW", "hw")


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
    if tensor.attribute_findings:
        items = "".join(f"<li>{escape(f)}</li>" for f in tensor.attribute_findings)
        parts.append(f"<div>attribute findings:<ul>{items}</ul></div>")
    if tensor.heatmap:
        uri = embed_png(run_dir, tensor.heatmap)
        if uri is None:
            parts.append(f'<div class="muted">heatmap {escape(tensor.heatmap)} missing</div>')
        else:
            alt = f"heatmap of {tensor.name}"
            parts.append(f'<img class="heat" alt="{escape(alt)}" src="{uri}">')
    parts.append("</div>")
    return "".join(parts)


def _header(summary: Mapping[str, Any]) -> str:
    meta = summary.get("meta", {})
    outcomes = summary["outcomes"]
    sim, hw = summary["simulated"], summary["hardware"]
    if hw == 0:
        banner = f'<div class="banner">SIMULATED: all {sim} tests ran on simulated boards</div>'
    elif sim == 0:
        banner = f'<div class="banner hwonly">HARDWARE: all {hw} tests ran on real boards</div>'
    else:
        banner = (
            f'<div class="banner mixed">MIXED: {hw} tests on hardware (HW), '
            f"{sim} on simulated boards (SIM)</div>"
        )
    if summary.get("no_board"):
        banner += (
            f'<div class="banner">{summary["no_board"]} cases had no board to run on '
            "(a SoC no board of the inventory serves)</div>"
        )
    counts = " ".join(_badge(f"{outcomes.get(o, 0)} {o}", o) for o in _ORDER)
    facts = "".join(
        f"<tr><th>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>"
        for k, v in meta.items()
        if not isinstance(v, (dict, list))
    )
    return (
        f"<h1>npu-hil run {escape(str(meta.get('run_id', '')))}</h1>{banner}"
        f"<p>{summary['total']} tests: {counts}</p><table>{facts}</table>"
    )


def _comparison(comparison: Mapping[str, Any]) -> str:
    previous = comparison.get("previous_run")
    if previous is None:
        return "<h2>Since the previous run</h2><p class='muted'>No previous run in this folder.</p>"
    html = [f"<h2>Since the previous run ({escape(str(previous))})</h2>"]
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
            for entry in entries:
                extra = entry.get("history") or [entry.get("previous"), entry.get("outcome")]
                trail = " → ".join(str(o) if o else "—" for o in extra)
                items.append(f"<li><code>{escape(entry['nodeid'])}</code> ({escape(trail)})</li>")
            html.append(f"<ul>{''.join(items)}</ul>")
    return "".join(html)


def _boards(summary: Mapping[str, Any]) -> str:
    rows = []
    for board, entry in summary["per_board"].items():
        cells = "".join(f"<td>{entry.get(o, 0)}</td>" for o in _ORDER)
        rows.append(
            f"<tr><td>{escape(board)}</td><td>{escape(str(entry.get('target') or ''))}</td>"
            f"<td>{escape(str(entry.get('backend') or ''))}</td>"
            f"<td>{'' if board == NO_BOARD else _sim_badge(bool(entry.get('simulated')))}</td>"
            f"{cells}</tr>"
        )
    head = "".join(f"<th>{o}</th>" for o in _ORDER)
    return (
        "<h2>Boards</h2><table><tr><th>board</th><th>target</th><th>backend</th><th>SIM/HW</th>"
        f"{head}</tr>{''.join(rows)}</table>"
    )


def _folded(title: str, text: str) -> str:
    return f"<details><summary>{escape(title)}</summary><pre>{escape(text)}</pre></details>"


def _tests(run_dir: Path, records: Sequence[TestRecord], new: set[str]) -> str:
    ordered = sorted(
        records, key=lambda r: (0 if r.nodeid in new else _ORDER.get(r.outcome, 2), r.nodeid)
    )
    rows = []
    for r in ordered:
        flag = " " + _badge("NEW", "new") if r.nodeid in new else ""
        detail = "".join(_tensor_html(run_dir, t) for t in r.tensors)
        if r.longrepr and r.outcome != "passed":
            detail += _folded("traceback", r.longrepr)
        if r.boot_log:
            detail += _folded("boot log", r.boot_log)
        rows.append(
            f'<tr class="row-{escape(r.outcome)}"><td>{_badge(r.outcome, r.outcome)}{flag}</td>'
            f"<td>{_sim_badge(r.simulated)}</td><td>{escape(r.board or '')}</td>"
            f"<td>{escape(r.target or '')}</td><td><code>{escape(r.nodeid)}</code>"
            f"<div>{escape(r.message)}</div>{detail}</td><td>{r.duration_s:.2f}s</td></tr>"
        )
    return (
        "<h2>Tests</h2><table><tr><th>outcome</th><th>SIM/HW</th><th>board</th><th>target</th>"
        f"<th>test</th><th>time</th></tr>{''.join(rows)}</table>"
    )


def build_html(
    run_dir: Path,
    records: Sequence[TestRecord],
    summary: Mapping[str, Any],
    comparison: Mapping[str, Any],
) -> str:
    new = {e["nodeid"] for e in comparison.get("new_failures", [])}
    title = f"npu-hil {summary.get('meta', {}).get('run_id', '')}"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(str(title))}</title><style>{CSS}</style></head><body>"
        f"{_header(summary)}{_comparison(comparison)}{_boards(summary)}"
        f"{_tests(run_dir, records, new)}</body></html>\n"
    )
