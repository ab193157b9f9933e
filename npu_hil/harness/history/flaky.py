"""Per case over the last runs: outcome strip, "failing since", flakiness, pass rate, latency and
accuracy series (docs/farm/history.md). States are the comparison's
(:func:`npu_hil.harness.report.compare.outcome_state`), so both count the same flips."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

from typing_extensions import TypedDict

from npu_hil.harness.history.model import CaseKey, CasePoint, RunEntry, strict_json
from npu_hil.harness.history.store import History
from npu_hil.harness.report.compare import outcome_state, state_flips

DEFAULT_RUNS = 20
ABSENT = ""  # the strip's outcome for a run the case was not in


class StripCell(TypedDict):
    """A run's outcome of a case in a history's strip (``absent``: not in that run)."""

    run_id: str
    outcome: str


class FailingSince(TypedDict):
    """The run a case's current failing streak began with."""

    run_id: str
    started: float


class CaseHistoryDocument(TypedDict):
    """One case of ``npu-hil history --json`` (:meth:`CaseHistory.to_dict`)."""

    board: str
    nodeid: str
    target: str
    strip: list[StripCell]
    failing_since: FailingSince | None
    flakiness: float
    flips: int
    pass_rate: float | None
    latency_p50_ms: list[float | None]
    latency_p50_last_ms: float | None
    latency_p50_median_ms: float | None
    snr_db: list[float | str | None]


@dataclass(frozen=True)
class CaseHistory:
    """One case (board, nodeid) over a window of runs, oldest first."""

    board: str
    nodeid: str
    target: str
    run_ids: tuple[str, ...]  # the window's runs, oldest first
    strip: tuple[str, ...]  # the outcome in each run of the window, ABSENT where it was not in it
    failing_since: tuple[str, float] | None  # (run id, start) of the current failing streak
    flakiness: float  # share of consecutive pass/fail states that differ, in [0, 1]
    flips: int
    pass_rate: float | None  # passed / states; None when the case has no state in the window
    latency_p50: tuple[float | None, ...]  # ms per run of the window, None where not timed
    snr_db: tuple[float | None, ...]  # worst output's SNR per run, inf for an exact match

    @property
    def key(self) -> CaseKey:
        return (self.board, self.nodeid)

    @property
    def last_outcome(self) -> str:
        return next((o for o in reversed(self.strip) if o != ABSENT), ABSENT)

    def latency_last(self) -> float | None:
        return next((v for v in reversed(self.latency_p50) if v is not None), None)

    def latency_median(self) -> float | None:
        values = [v for v in self.latency_p50 if v is not None]
        return float(median(values)) if values else None

    def snr_last(self) -> float | None:
        return next((v for v in reversed(self.snr_db) if v is not None), None)

    def to_dict(self) -> CaseHistoryDocument:
        since = self.failing_since
        return {
            "board": self.board,
            "nodeid": self.nodeid,
            "target": self.target,
            "strip": [
                {"run_id": r, "outcome": o} for r, o in zip(self.run_ids, self.strip, strict=True)
            ],
            "failing_since": {"run_id": since[0], "started": since[1]} if since else None,
            "flakiness": self.flakiness,
            "flips": self.flips,
            "pass_rate": self.pass_rate,
            "latency_p50_ms": list(self.latency_p50),
            "latency_p50_last_ms": self.latency_last(),
            "latency_p50_median_ms": self.latency_median(),
            # JSON has no infinity: an exact match is "inf", as in the records
            "snr_db": strict_json(list(self.snr_db)),
        }


def numeric(value: Any) -> float | None:
    """A figure as the records keep it (a number, ``"inf"``, null) as a float or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)  # a string too: "inf", "-inf", "nan"
    except ValueError:
        return None


# outcome_state as a table: a history's view walks a million points, no call per point (the
# same states: checked by the tests)
_STATES = {o: s for o in ("passed", "failed", "error") if (s := outcome_state(o)) is not None}


def flakiness(outcomes: Iterable[str | None]) -> tuple[float, int]:
    """(rate, flips) over the pass/fail states of ``outcomes`` (oldest first)."""
    states = [_STATES[o] for o in outcomes if o in _STATES]
    flips = state_flips(states)
    return (flips / (len(states) - 1) if len(states) > 1 else 0.0), flips


def failing_since(outcomes: Sequence[str | None]) -> int | None:
    """The index in ``outcomes`` (oldest first) of the first failure of the trailing failures:
    the failing streak the case is in now. Skips and absences neither start nor break a streak;
    None when the last state passed or there is no state."""
    first: int | None = None
    for index in range(len(outcomes) - 1, -1, -1):
        state = _STATES.get(outcomes[index])  # type: ignore[arg-type]
        if state == "pass":
            break
        if state == "fail":
            first = index
    return first


def case_histories(
    history: History,
    runs: int = DEFAULT_RUNS,
    *,
    board: str | None = None,
    case: str | None = None,
) -> list[CaseHistory]:
    """Every case of ``history`` seen in its last ``runs`` runs, sorted by board and nodeid;
    ``board`` keeps one board's, ``case`` the cases whose nodeid contains it."""
    window = history.runs[-runs:] if runs > 0 else []
    position = {entry.run_id: i for i, entry in enumerate(window)}
    run_ids = tuple(entry.run_id for entry in window)
    found = []
    for key in sorted(history.points):
        if (board is not None and key[0] != board) or (case is not None and case not in key[1]):
            continue
        placed = _placed(history.points[key], position, len(window))
        if placed is None:
            continue
        found.append(_case_history(key, run_ids, placed, window))
    return found


def _placed(
    points: Sequence[CasePoint], position: dict[str, int], size: int
) -> list[CasePoint | None] | None:
    """The case's points laid on the window (None where it has none), or None when it has no
    point in the window at all."""
    slots: list[CasePoint | None] = [None] * size
    seen = False
    # points are oldest first and the window is the newest runs: walk from the newest point
    # and stop at the first one older than the window
    for point in reversed(points):
        index = position.get(point.run_id)
        if index is None:
            break
        slots[index] = point
        seen = True
    return slots if seen else None


def _case_history(
    key: CaseKey,
    run_ids: tuple[str, ...],
    placed: list[CasePoint | None],
    window: Sequence[RunEntry],
) -> CaseHistory:
    strip = tuple(p.outcome if p is not None else ABSENT for p in placed)
    flakiness_rate, flips = flakiness(strip)
    passes, states = strip.count("passed"), sum(o in _STATES for o in strip)
    since_index = failing_since(strip)
    since = (
        (window[since_index].run_id, window[since_index].started)
        if since_index is not None
        else None
    )
    target = next((p.target for p in reversed(placed) if p is not None), "")
    return CaseHistory(
        board=key[0],
        nodeid=key[1],
        target=target,
        run_ids=run_ids,
        strip=strip,
        failing_since=since,
        flakiness=flakiness_rate,
        flips=flips,
        pass_rate=passes / states if states else None,
        latency_p50=tuple(figure(p.latency, "p50_ms") if p is not None else None for p in placed),
        snr_db=tuple(figure(p.accuracy, "snr_db") if p is not None else None for p in placed),
    )


def figure(figures: Mapping[str, object] | None, name: str) -> float | None:
    """A figure of a point's latency or accuracy, checked by :func:`numeric` (a file may hold
    anything there), None without it."""
    if not figures:
        return None
    value = figures.get(name)
    return value if type(value) is float else numeric(value)
