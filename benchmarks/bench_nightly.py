"""The full simulated nightly on the default inventory at -n 1 and -n 2: cases and wall time.

    python benchmarks/bench_nightly.py [--workers 1,2] [--suite tests/hil] [--keep]

Each run is ``npu-hil nightly`` exactly as the farm job starts it (a pytest subprocess with the
npu-hil plugin, the report written at the end), into a throwaway reports folder. Wall time covers
everything: pytest start-up, collection, the xdist workers, the simulated boards, the report.
The -n 2 row also shows its speed-up over -n 1 measured in the same run.
Target: at least 500 cases in at most 120 s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TARGET_CASES = 500
TARGET_SECONDS = 120.0


@dataclass
class NightlyRun:
    workers: int
    exit_code: int
    wall_s: float
    outcomes: dict[str, int]
    simulated: int
    hardware: int

    @property
    def cases(self) -> int:
        return sum(self.outcomes.values())

    @property
    def rate(self) -> float:
        return self.cases / self.wall_s if self.wall_s else 0.0


def run_nightly(workers: int, reports: Path, suite: Path | None) -> NightlyRun:
    cmd = [sys.executable, "-m", "npu_hil.harness.cli.main", "nightly", "--reports", str(reports)]
    if suite is not None:
        cmd += ["--suite", str(suite)]
    if workers > 1:
        cmd += ["-n", str(workers)]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    summaries = sorted(reports.glob("*/summary.json"))
    if not summaries:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        return NightlyRun(workers, proc.returncode, wall, {}, 0, 0)
    summary = json.loads(summaries[-1].read_text())
    return NightlyRun(
        workers,
        proc.returncode,
        wall,
        summary["outcomes"],
        summary["simulated"],
        summary["hardware"],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workers", default="1,2", help="comma-separated -n values")
    parser.add_argument("--suite", type=Path, help="default: tests/hil under the cwd")
    parser.add_argument("--keep", action="store_true", help="keep the reports folders")
    args = parser.parse_args(argv)
    counts = [int(w) for w in args.workers.split(",")]
    root = Path(tempfile.mkdtemp(prefix="bench-nightly-"))
    runs = []
    try:
        for workers in counts:
            runs.append(run_nightly(workers, root / f"n{workers}", args.suite))
    finally:
        if args.keep:
            print(f"reports kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"simulated nightly, default inventory, {os.cpu_count()} CPUs visible")
    header = (
        f"{'-n':>3} {'cases':>6} {'passed':>6} {'failed':>6} {'error':>6} {'skipped':>7} "
        f"{'sim':>5} {'hw':>3} {'wall s':>7} {'cases/s':>8} {'vs -n1':>7} {'exit':>4}"
    )
    print(header)
    print("-" * len(header))
    base = runs[0].wall_s if runs else 0.0
    for run in runs:
        o = run.outcomes
        print(
            f"{run.workers:>3} {run.cases:>6} {o.get('passed', 0):>6} {o.get('failed', 0):>6} "
            f"{o.get('error', 0):>6} {o.get('skipped', 0):>7} {run.simulated:>5} "
            f"{run.hardware:>3} {run.wall_s:>7.1f} {run.rate:>8.1f} "
            f"{base / run.wall_s if run.wall_s else 0:>6.2f}x {run.exit_code:>4}"
        )
    two = next((r for r in runs if r.workers == 2), None)
    if two is not None:
        met = two.cases >= TARGET_CASES and two.wall_s <= TARGET_SECONDS
        print(
            f"target (>= {TARGET_CASES} cases in <= {TARGET_SECONDS:.0f} s at -n 2): "
            f"{'met' if met else 'NOT met'} ({two.cases} cases in {two.wall_s:.1f} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
