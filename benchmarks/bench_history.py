"""The history code on 1,000 runs x 1,000 cases: index, load, flakiness, trends, HTML.

    python benchmarks/bench_history.py                      # 1,000 runs x 1,000 cases
    python benchmarks/bench_history.py --runs 100 --cases 200   # quicker

A throwaway reports folder gets one measurements.json per run (the store's own schema; the first
run is written with ``write_measurements`` and the rest are checked to be the same document
shape), 10 boards, cases that pass, flip, start failing or skip, latency p50 with a ±2 % spread
and SNR figures. Each step is timed once (they are large), and each is given as a ratio to the
baseline measured in the same run: reading and ``json.loads``-ing the same measurements.json files
raw, with nothing built from them.

Steps: the index update (``update_index`` once per run as each run's end does, the index kept at
every run), ``load_history`` of every run, the per-case strip / failing since / flakiness
(``case_histories`` over every run), the page's history view with its plots (over every run,
and the plugin's own path: the last 20 runs), and the page (``build_html`` of the newest run's
1,000 records with that view).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
BOARDS = 10
STAMP = 1_790_000_000.0  # 2026-09-21, the first run's start; a run a day


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    gc.collect()
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started


def run_id(index: int) -> str:
    stamp = time.gmtime(STAMP + 86_400 * index)
    return time.strftime("%Y%m%dT%H%M%SZ", stamp) + f"-{index:06x}"


class Cases:
    """The cases and how each behaves: most pass, some flip, some start failing, a few skip."""

    def __init__(self, count: int, runs: int, seed: int) -> None:
        rng = random.Random(seed)
        self.cases = []
        for c in range(count):
            board = f"board-{c % BOARDS:02d}"
            kind = rng.random()
            self.cases.append(
                {
                    "nodeid": f"tests/hil/test_reference.py::test_model[m{c:04d}-{board}]",
                    "board": board,
                    "target": f"target-{c % BOARDS % 3}",
                    "p50": rng.uniform(0.05, 2.0),
                    "snr": "inf" if rng.random() < 0.1 else rng.uniform(35, 50),
                    "flaky": kind < 0.05,
                    "breaks_at": rng.randrange(runs) if 0.05 <= kind < 0.08 else None,
                    "skipped": 0.08 <= kind < 0.10,
                }
            )

    def points(self, index: int, rng: random.Random) -> list[dict[str, Any]]:
        """One run's cases as measurements.json holds them (CasePoint.to_dict)."""
        found = []
        for case in self.cases:
            if case["skipped"]:
                outcome = "skipped"
            elif case["flaky"]:
                outcome = "failed" if rng.random() < 0.3 else "passed"
            elif case["breaks_at"] is not None and index >= case["breaks_at"]:
                outcome = "failed"
            else:
                outcome = "passed"
            ran = outcome != "skipped"
            p50 = case["p50"] * (1 + rng.uniform(-0.02, 0.02))
            found.append(
                {
                    "nodeid": case["nodeid"],
                    "board": case["board"],
                    "target": case["target"],
                    "outcome": outcome,
                    "ran_on": "sim" if ran else "",
                    "latency": {
                        "runs": 20,
                        "warmup": 2,
                        "p50_ms": p50,
                        "p90_ms": p50 * 1.04,
                        "p99_ms": p50 * 1.09,
                        "min_ms": p50 * 0.98,
                        "max_ms": p50 * 1.1,
                        "mean_ms": p50 * 1.01,
                        "stdev_ms": p50 * 0.02,
                        "jitter_ms": p50 * 0.09,
                        "source": "adapter",
                    }
                    if ran
                    else None,
                    "accuracy": {"snr_db": case["snr"], "cosine": 0.99997} if ran else None,
                    "noisy": "",
                }
            )
        return found


def generate(root: Path, runs: int, count: int, key: str) -> list[Any]:
    """Every run's measurements.json; the run entries, oldest first."""
    from npu_hil.harness.history.model import CasePoint, RunEntry
    from npu_hil.harness.history.store import write_measurements

    cases = Cases(count, runs, seed=17)
    rng = random.Random(18)
    entries = []
    for index in range(runs):
        rid = run_id(index)
        points = cases.points(index, rng)
        counts: dict[str, int] = {}
        for point in points:
            counts[point["outcome"]] = counts.get(point["outcome"], 0) + 1
        entry = RunEntry(rid, key, STAMP + 86_400 * index, True, counts, len(points))
        run_dir = root / rid
        run_dir.mkdir()
        if index == 0:
            # the store's writer for the first run; the rest the same document, written faster
            # (the writer cleans every string, which generated ASCII does not need)
            write_measurements(run_dir, entry, [CasePoint(run_id=rid, **p) for p in points])
            reference = json.loads((run_dir / "measurements.json").read_text(encoding="utf-8"))
            assert reference["cases"] == points, "the generator drifted from the store's schema"
        else:
            doc = {"schema": 1, **entry.to_dict(), "cases": points}
            text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
            (run_dir / "measurements.json").write_text(text, encoding="utf-8")
        entries.append(entry)
    return entries


def raw_parse(root: Path, entries: list[Any]) -> int:
    total = 0
    for entry in entries:
        doc = json.loads((root / entry.run_id / "measurements.json").read_text(encoding="utf-8"))
        total += len(doc["cases"])
    return total


def records_of(history: Any) -> list[Any]:
    """The newest run's cases as the report's records (what the page shows beside the view)."""
    from npu_hil.harness.report.records import TestRecord

    newest = history.runs[-1].run_id
    return [
        TestRecord(
            nodeid=p.nodeid,
            outcome=p.outcome,
            duration_s=0.05,
            board=p.board,
            target=p.target,
            backend="sim",
            simulated=True,
            message="" if p.outcome == "passed" else f"{p.outcome}: buffers differ",
        )
        for series in history.points.values()
        for p in series
        if p.run_id == newest
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--dir", type=Path, default=None, help="where the reports folder goes")
    args = parser.parse_args(argv)

    from npu_hil.harness.history.flaky import case_histories
    from npu_hil.harness.history.store import load_history, update_index
    from npu_hil.harness.history.trends import trends_view
    from npu_hil.harness.report.html import build_html
    from npu_hil.harness.report.summary import build_summary

    key = "bench-kind"
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-history-") as folder:
        root = Path(folder)
        entries, gen_s = timed(lambda: generate(root, args.runs, args.cases, key))
        # the written files reach the disk now, not inside the index's first fsyncs
        _, sync_s = timed(os.sync)
        size = sum(p.stat().st_size for p in root.glob("*/measurements.json"))
        print(
            f"{args.runs} runs x {args.cases} cases ({BOARDS} boards): "
            f"{size / 1e6:.0f} MB of measurements.json, generated in {gen_s:.1f} s "
            f"(+ {sync_s:.1f} s to sync)"
        )

        def index_all() -> Any:
            for entry in entries:
                kept = update_index(root, entry, keep=args.runs)
            return kept

        kept, index_s = timed(index_all)
        assert len(kept) == args.runs
        _, last_index_s = timed(lambda: update_index(root, entries[-1], keep=args.runs))
        cases, raw_s = timed(lambda: raw_parse(root, entries))
        history, load_s = timed(lambda: load_history(root, key, limit=args.runs))
        assert len(history.runs) == args.runs and sum(map(len, history.points.values())) == cases
        found, flaky_s = timed(lambda: case_histories(history, args.runs))
        failing = sum(c.failing_since is not None for c in found)
        flaky = sum(c.flips > 1 for c in found)
        view, view_s = timed(lambda: trends_view(history, args.runs))
        small, plugin_s = timed(lambda: trends_view(load_history(root, key, limit=20)))
        assert small is not None
        records = records_of(history)
        summary = build_summary(records, {"run_id": entries[-1].run_id, "run_key": key})
        page, html_s = timed(
            lambda: build_html(root / entries[-1].run_id, records, summary, {}, view)
        )

    rows = [
        (f"index update x{args.runs} (each run's end)", index_s),
        (f"  one update at {args.runs} runs", last_index_s),
        (f"load_history, {args.runs} runs", load_s),
        (f"flakiness / failing since, {len(found)} cases x {args.runs} runs", flaky_s),
        (f"trends view + plots, {args.runs} runs", view_s),
        ("trends view + plots, the plugin's (last 20 runs, loaded)", plugin_s),
        (f"HTML page ({len(records)} records + history)", html_s),
    ]
    print(f"baseline: reading and json-parsing the {args.runs} files raw: {raw_s:.2f} s")
    print("| step | s | ratio to raw parse |")
    print("|---|---|---|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.2f} | {seconds / raw_s:.2f} |")
    drawn = sum(len(b["cases"]) for b in view["boards"])
    print(
        f"{failing} cases failing now, {flaky} flaky; the page draws {len(view['boards'])} boards "
        f"and {drawn} cases ({view['omitted_cases']} counted, not drawn): "
        f"{len(page.encode()) / 1e6:.1f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
