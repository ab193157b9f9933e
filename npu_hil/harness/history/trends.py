"""The report page's history view as plain data: per board a latency and a pass-rate plot (PNG
data URIs) and a row per case, at most ``MAX_BOARDS`` boards and ``MAX_CASES`` cases (failing and
flaky first; docs/farm/history.md). The page renders it and never imports this package."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timezone

from typing_extensions import TypedDict

from npu_hil.harness.history.flaky import (
    ABSENT,
    DEFAULT_RUNS,
    CaseHistory,
    StripCell,
    case_histories,
)
from npu_hil.harness.history.store import History
from npu_hil.harness.report.compare import outcome_state
from npu_hil.harness.report.plots import PlotStyle

MAX_BOARDS = 30
MAX_CASES = 200
PLOTS = PlotStyle(
    xlabel="run (oldest → newest)",
    inches=(8.0, 3.0),
    dpi=80,  # 640 x 240 px
    margins=(0.09, 0.98, 0.9, 0.19),
)
LINES_WITH_LEGEND = 8
MARKED_RUNS = 60  # more lines than this: no legend (nodeids would fill the plot)


class CaseRow(TypedDict):
    """A case's row under its board in the page's history view."""

    nodeid: str
    target: str
    strip: list[StripCell]
    failing_since: str | None
    failing_since_started: str
    flakiness: float
    flips: int
    pass_rate: float | None
    latency_last_ms: float | None
    latency_median_ms: float | None
    snr_last_db: float | None
    last_outcome: str


class Highlight(TypedDict):
    """A case under one of the view's headings: its last two outcomes."""

    board: str
    nodeid: str
    before: str
    now: str
    failing_since: str | None
    flips: int


class Highlighted(TypedDict):
    """One heading's cases (at most MAX_HIGHLIGHTS) and their full count."""

    total: int
    cases: list[Highlight]


class BoardView(TypedDict):
    """A board in the history view: its counts, its plots (PNG data URIs) and its case rows."""

    board: str
    cases_total: int
    failing: int
    flaky: int
    pass_rate_per_run: list[float | None]
    latency_png: str | None
    pass_rate_png: str | None
    cases: list[CaseRow]


class RunRef(TypedDict):
    """A run of the view's window."""

    run_id: str
    started: str


class TrendsView(TypedDict):
    """The report page's history view (:func:`trends_view`)."""

    runs: list[RunRef]
    run_key: str
    boards: list[BoardView]
    highlights: dict[str, Highlighted]
    cases_total: int
    omitted_boards: int
    omitted_cases: int


def _iso(started: float) -> str:
    if not started:
        return ""
    return datetime.fromtimestamp(started, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def _short(nodeid: str) -> str:
    name = nodeid.rsplit("::", 1)[-1]
    return name if len(name) <= 40 else name[:37] + "..."


def latency_plot(board: str, cases: Sequence[CaseHistory]) -> str | None:
    """Latency p50 per case over the runs, or None when no case of the board timed anything."""
    series = [(c, [v if v is not None else math.nan for v in c.latency_p50]) for c in cases]
    series = [(c, ys) for c, ys in series if any(not math.isnan(y) for y in ys)]
    if not series:
        return None
    figure, axes = PLOTS.figure(f"{board}: latency p50 per case", "ms")
    for case, ys in series:
        axes.plot(
            range(len(ys)), ys, marker=".", markersize=3, linewidth=1, label=_short(case.nodeid)
        )
    if len(series) <= LINES_WITH_LEGEND:
        axes.legend(fontsize=6, loc="best")
    return PLOTS.png(figure)


def pass_rate_per_run(cases: Sequence[CaseHistory]) -> list[float | None]:
    """Per run of the window: the share of the cases' pass/fail states that passed."""
    rates: list[float | None] = []
    # every strip spans the window: a run's outcomes, one per case
    for outcomes in zip(*(c.strip for c in cases), strict=True):
        counted = [s for s in map(outcome_state, outcomes) if s is not None]
        rates.append(counted.count("pass") / len(counted) if counted else None)
    return rates


def pass_rate_plot(board: str, rates: Sequence[float | None]) -> str | None:
    if not any(r is not None for r in rates):
        return None
    figure, axes = PLOTS.figure(f"{board}: pass rate", "passed / (passed + failed)")
    ys = [100 * r if r is not None else math.nan for r in rates]
    # a dot per run while the runs can be told apart; over a long window the line alone
    marks = {"marker": ".", "markersize": 3} if len(ys) <= MARKED_RUNS else {}
    axes.plot(range(len(ys)), ys, linewidth=1, color="#2e7d32", **marks)
    axes.set_ylim(-5, 105)
    return PLOTS.png(figure)


def _case_row(case: CaseHistory, window: Sequence[str]) -> CaseRow:
    since = case.failing_since
    return {
        "nodeid": case.nodeid,
        "target": case.target,
        "strip": [
            {"run_id": r, "outcome": o}
            for r, o in list(zip(window, case.strip, strict=True))[-DEFAULT_RUNS:]
        ],
        "failing_since": since[0] if since else None,
        "failing_since_started": _iso(since[1]) if since else "",
        "flakiness": case.flakiness,
        "flips": case.flips,
        "pass_rate": case.pass_rate,
        "latency_last_ms": case.latency_last(),
        "latency_median_ms": case.latency_median(),
        "snr_last_db": case.snr_last(),  # may be inf: the page says "exact"
        "last_outcome": case.last_outcome,
    }


MAX_HIGHLIGHTS = 50
"""Cases listed under each heading the history section leads with (changed, failing, flipping);
the folded per-case table and ``npu-hil history`` have the rest."""


def _highlight(case: CaseHistory) -> Highlight:
    since = case.failing_since
    return {
        "board": case.board,
        "nodeid": case.nodeid,
        "before": case.strip[-2] if len(case.strip) > 1 else ABSENT,
        "now": case.strip[-1] if case.strip else ABSENT,
        "failing_since": since[0] if since else None,
        "flips": case.flips,
    }


def highlights(cases: Sequence[CaseHistory]) -> dict[str, Highlighted]:
    """What a reader wants first: the cases whose pass/fail state changed in the last run (a new
    case or one gone counts), those failing now, and those that flipped more than once; each
    list capped at MAX_HIGHLIGHTS, with its full count."""
    changed = [
        c
        for c in cases
        if len(c.strip) > 1
        and (outcome_state(c.strip[-2]), c.strip[-2] == ABSENT)
        != (outcome_state(c.strip[-1]), c.strip[-1] == ABSENT)
    ]
    failing = [c for c in cases if c.failing_since is not None]
    flipping = sorted((c for c in cases if c.flips > 1), key=lambda c: (-c.flips, c.key))
    return {
        name: {"total": len(found), "cases": [_highlight(c) for c in found[:MAX_HIGHLIGHTS]]}
        for name, found in (("changed", changed), ("failing", failing), ("flipping", flipping))
    }


def trends_view(
    history: History,
    runs: int = DEFAULT_RUNS,
    *,
    plots: bool = True,
) -> TrendsView:
    """The view of the last ``runs`` runs of ``history`` (see the module's docstring)."""
    cases = case_histories(history, runs)
    window = history.runs[-runs:] if runs > 0 else []
    run_ids = [e.run_id for e in window]
    per_board: dict[str, list[CaseHistory]] = {}
    for case in cases:
        per_board.setdefault(case.board, []).append(case)
    boards = sorted(per_board)[:MAX_BOARDS]
    shown_boards = set(boards)
    # failing first, then the flakiest
    candidates = sorted(
        (c for c in cases if c.board in shown_boards),
        key=lambda c: (c.failing_since is None, -c.flakiness, c.board, c.nodeid),
    )
    drawn: dict[str, list[CaseHistory]] = {}
    for case in candidates[:MAX_CASES]:
        drawn.setdefault(case.board, []).append(case)
    # One run draws no trend: a single point on empty axes says nothing.
    plots = plots and len(window) > 1
    board_views: list[BoardView] = []
    for board in boards:
        chosen = sorted(drawn.get(board, []), key=lambda c: c.nodeid)
        everyone = per_board[board]
        rates = pass_rate_per_run(everyone)
        board_views.append(
            {
                "board": board,
                "cases_total": len(everyone),
                "failing": sum(c.failing_since is not None for c in everyone),
                "flaky": sum(c.flips > 1 for c in everyone),
                "pass_rate_per_run": rates,
                "latency_png": latency_plot(board, chosen) if plots else None,
                "pass_rate_png": pass_rate_plot(board, rates) if plots else None,
                "cases": [_case_row(c, run_ids) for c in chosen],
            }
        )
    return {
        "runs": [{"run_id": e.run_id, "started": _iso(e.started)} for e in window],
        "run_key": window[-1].run_key if window else "",
        "boards": board_views,
        "highlights": highlights(cases),
        "cases_total": len(cases),
        "omitted_boards": len(per_board) - len(boards),
        "omitted_cases": len(cases) - sum(len(v) for v in drawn.values()),
    }
