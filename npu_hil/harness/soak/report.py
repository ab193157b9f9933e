"""The soak's report in a new private ``<reports>/soak-<run-id>/``: ``soak.json`` and ``soak.html``
(docs/farm/health.md, "Soak"). The folder's name is no nightly run id, so the nightly's history
and comparisons never take a soak for a run."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from html import escape
from pathlib import Path

from typing_extensions import TypedDict

from npu_hil.harness.folders import private_dir
from npu_hil.harness.report.atomic import write_text_atomic
from npu_hil.harness.report.plots import PlotStyle
from npu_hil.harness.report.runmeta import RunMeta
from npu_hil.harness.report.runs import new_run_id
from npu_hil.harness.soak.loop import BoardDocument, BoardSoak, SoakRun
from npu_hil.harness.soak.samples import PlanDocument
from npu_hil.harness.soak.verdict import Verdict, VerdictDocument, sample_value

SCHEMA = "npu-hil-soak/1"
JSON_FILE = "soak.json"
HTML_FILE = "soak.html"
PLOTS = PlotStyle(
    xlabel="time since start (s)", inches=(8.0, 2.8), dpi=90, margins=(0.1, 0.98, 0.88, 0.18)
)


class SoakDocument(TypedDict):
    """soak.json (``soak_document``)."""

    schema: str
    started: str
    elapsed_s: float
    interrupted: bool
    plan: PlanDocument
    verdict: VerdictDocument
    boards: list[BoardDocument]
    meta: RunMeta


def soak_document(run: SoakRun, verdict: Verdict, meta: RunMeta | None = None) -> SoakDocument:
    started = datetime.fromtimestamp(run.started, timezone.utc).isoformat(timespec="seconds")
    return {
        "schema": SCHEMA,
        "started": started,
        "elapsed_s": round(run.elapsed_s, 3),
        "interrupted": run.interrupted,
        "plan": run.plan.to_dict(),
        "verdict": verdict.to_dict(),
        "boards": [part.to_dict() for part in run.boards],
        "meta": meta.copy() if meta else {},
    }


def memory_plot(part: BoardSoak, verdict: Verdict, metric: str) -> str | None:
    """One board's agents' RSS (``rss_kib``) or its CMA in use (``cma_used_kib``) over time,
    with the fitted lines (after the warm-up), or None when nothing was measured."""
    fits = [s for s in verdict.series if s.board == part.board and s.metric == metric]
    if not fits:
        return None
    label = "agent RSS (KiB)" if metric == "rss_kib" else "CMA in use (KiB)"
    figure, axes = PLOTS.figure(f"{part.board}: {label}", "KiB")
    drawn = False
    fitted: list[float] = []
    for n, series in enumerate(fits):
        # a board-wide pool: every context's samples; an agent's RSS: its one process's
        own = [
            s
            for s in part.samples
            if series.context is None or (s.context, s.pid) == (series.context, series.pid)
        ]
        points = [(s.t_s, v) for s in own if (v := sample_value(s, metric)) is not None]
        if not points:
            continue
        color = f"C{n % 10}"
        name = "board" if series.context is None else f"context {series.context}"
        times, values = zip(*points, strict=True)
        axes.plot(times, values, marker=".", markersize=3, linewidth=0.8, color=color, label=name)
        kept = points[series.warmup_dropped :]
        if series.warmup_dropped and kept:
            axes.axvspan(points[0][0], kept[0][0], color="0.9", zorder=0)
        fit = series.per_hour  # the line over time, in the metric's units per hour
        if fit is not None and kept:
            span = (min(p[0] for p in kept), max(p[0] for p in kept))
            line = [fit.intercept + fit.slope * t / 3600.0 for t in span]
            axes.plot(span, line, linestyle="--", color=color, linewidth=1)
        fitted += [p[1] for p in kept]
        drawn = True
    if not drawn:
        return None
    if fitted:
        # The fitted part decides the scale: the agent's first reading, before any model was
        # loaded, would flatten a leak of a few MiB into a line (the warm-up is shaded).
        low, high = min(fitted), max(fitted)
        pad = max((high - low) * 0.15, 64.0)
        axes.set_ylim(low - pad, high + pad)
    axes.legend(fontsize=7, loc="upper left", title="shaded: warm-up, not fitted", title_fontsize=6)
    return PLOTS.png(figure)


def errors_plot(part: BoardSoak) -> str | None:
    """The board's failed jobs, counted up over time (every context together)."""
    if not part.contexts:
        return None
    figure, axes = PLOTS.figure(f"{part.board}: failed jobs", "failed jobs (cumulative)")
    times = [f.t_s for f in part.failures]
    end = max([s.t_s for s in part.samples] + times + [0.0])
    axes.step(
        [0.0, *times, end], [0, *range(1, len(times) + 1), len(times)], where="post", color="C3"
    )
    axes.set_ylim(bottom=0)
    return PLOTS.png(figure)


_STYLE = (
    "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
    ".pass{color:#060}.fail{color:#a00}img{display:block;margin:6px 0}"
)


def _series_rows(verdict: Verdict, board: str) -> str:
    rows = []
    for s in (x for x in verdict.series if x.board == board):
        per_1k, per_h = s.per_1k, s.per_hour
        cells = (
            "board" if s.context is None else f"context {s.context} (pid {s.pid})",
            s.metric,
            str(s.samples),
            "-" if per_1k is None else f"{per_1k.slope:.1f} [{per_1k.low:.1f}, {per_1k.high:.1f}]",
            "-" if per_h is None else f"{per_h.slope:.0f} [{per_h.low:.0f}, {per_h.high:.0f}]",
            "; ".join(s.failed) or s.problem or "ok",
        )
        rows.append("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in cells) + "</tr>")
    return "".join(rows)


def soak_html(run: SoakRun, verdict: Verdict) -> str:
    state = "PASSED" if verdict.passed else "FAILED"
    simulated = any(p.simulated for p in run.boards)
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>npu-hil soak {state}</title>"
        f"<style>{_STYLE}</style></head><body>",
        f"<h1 class='{state.lower()}'>npu-hil soak: {state}</h1>",
        f"<p>{'SIMULATED boards' if simulated else 'hardware boards'}; ran "
        f"{run.elapsed_s:.0f} s; models {escape(', '.join(run.plan.models))}; "
        f"{run.plan.contexts} context(s) per board; a memory sample every "
        f"{run.plan.sample_every_s:g} s.</p>",
        "<p>Bounds: " + escape(json.dumps(verdict.bounds.to_dict())) + "</p>",
    ]
    if verdict.reasons:
        parts.append("<ul>" + "".join(f"<li>{escape(r)}</li>" for r in verdict.reasons) + "</ul>")
    for part in run.boards:
        found = verdict.error_rates.get(part.board)
        rate = found["rate"] if found is not None else 0
        parts.append(f"<h2>{escape(part.board)} ({escape(part.target)})</h2>")
        if part.problem:
            parts.append(f"<p class='fail'>did not run: {escape(part.problem)}</p>")
            continue
        parts.append(
            f"<p>{part.jobs} jobs, {part.errors} failed (rate {float(rate):.4f}); "
            f"at most {part.max_concurrent} jobs at once.</p>"
        )
        parts.append(
            "<table><tr><th>series</th><th>metric</th><th>samples</th>"
            "<th>KiB / 1000 jobs [95 %]</th><th>KiB / hour [95 %]</th><th>verdict</th></tr>"
            + _series_rows(verdict, part.board)
            + "</table>"
        )
        for image in (
            memory_plot(part, verdict, "rss_kib"),
            memory_plot(part, verdict, "cma_used_kib"),
            errors_plot(part),
        ):
            if image is not None:
                parts.append(f"<img alt='plot' src='{image}'>")
        if part.failures:
            parts.append(
                "<p>First failures:</p><ul>"
                + "".join(
                    f"<li>{f.t_s:.1f} s, context {f.context}, {escape(f.model)}: "
                    f"{escape(f.kind)}: {escape(f.message[:300])}</li>"
                    for f in part.failures[:20]
                )
                + "</ul>"
            )
    parts.append("</body></html>")
    return "\n".join(parts)


def write_soak_report(
    reports_root: str | Path, run: SoakRun, verdict: Verdict, meta: RunMeta | None = None
) -> Path:
    """Write the report into a new ``<reports_root>/soak-<run-id>/`` and return that folder."""
    root = private_dir(reports_root)
    while True:
        folder = root / f"soak-{new_run_id()}"
        if not folder.exists():
            break
    private_dir(folder)
    document = soak_document(run, verdict, meta)
    write_text_atomic(folder / JSON_FILE, json.dumps(document, indent=1) + "\n")
    write_text_atomic(folder / HTML_FILE, soak_html(run, verdict))
    return folder
