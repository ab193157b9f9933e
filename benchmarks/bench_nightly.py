"""The simulated nightly on the default inventory, locally, over SSH and over serial, side by side.

    python benchmarks/bench_nightly.py [--modes local,ssh,serial] [--workers 2] [--rounds 1]
                                       [--suite tests/hil] [--keep]

Each run is ``npu-hil nightly`` exactly as the farm job starts it (a pytest subprocess with the
npu-hil plugin, the report written at the end), into a throwaway reports folder; ``ssh`` and
``serial`` add ``--simfarm ssh`` / ``--simfarm serial`` (simulated boards behind a real sshd or
serial console on 127.0.0.1, the farm's start-up included). Wall time covers everything: pytest
start-up, collection, the xdist workers, the simulated boards, the report.

Every row's ratio is to the local run at the same -n of the same round, measured in the same
invocation (the machine's load moves absolute times by a third between runs; the ratio is the
figure); ``--rounds N`` repeats the modes interleaved and prints each link's median ratio.
Targets: at least 500 cases in at most 120 s locally at -n 2; over SSH within 1.5x of local,
over serial within 2.5x.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TARGET_CASES = 500
TARGET_SECONDS = 120.0
MODES = ("local", "ssh", "serial")
# each link's wall time ÷ local's, at the same -n
TARGET_RATIO = {"ssh": 1.5, "serial": 2.5}


@dataclass
class NightlyRun:
    mode: str
    workers: int
    round: int
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


def nightly_command(mode: str, workers: int, reports: Path, suite: Path | None) -> list[str]:
    cmd = [sys.executable, "-m", "npu_hil.harness.cli.main", "nightly", "--reports", str(reports)]
    if suite is not None:
        cmd += ["--suite", str(suite)]
    if mode != "local":
        cmd += ["--simfarm", mode]
    if workers > 1:
        cmd += ["-n", str(workers)]
    return cmd


def run_nightly(
    mode: str, workers: int, reports: Path, suite: Path | None, round_: int = 1
) -> NightlyRun:
    cmd = nightly_command(mode, workers, reports, suite)
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    summaries = sorted(reports.glob("*/summary.json"))
    if not summaries:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        return NightlyRun(mode, workers, round_, proc.returncode, wall, {}, 0, 0)
    summary = json.loads(summaries[-1].read_text())
    return NightlyRun(
        mode,
        workers,
        round_,
        proc.returncode,
        wall,
        summary["outcomes"],
        summary["simulated"],
        summary["hardware"],
    )


def parse_modes(text: str) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if not modes or unknown:
        raise SystemExit(f"--modes {text!r}: expected some of {', '.join(MODES)}")
    return modes


def ratio_cell(run: NightlyRun, local: NightlyRun | None) -> tuple[str, str, str]:
    """(ratio to local, target, met) for one row; local's own row has no target."""
    if run.mode == "local" or local is None or not local.wall_s:
        return ("1.00x" if run.mode == "local" else "-", "-", "-")
    ratio = run.wall_s / local.wall_s
    target = TARGET_RATIO[run.mode]
    met = ratio <= target and run.cases == local.cases
    return (f"{ratio:.2f}x", f"{target:.1f}x", "yes" if met else "NO")


def local_of(runs: list[NightlyRun], run: NightlyRun) -> NightlyRun | None:
    """The local run of the same round and -n: the baseline of ``run``'s ratio."""
    return next(
        (r for r in runs if r.mode == "local" and (r.workers, r.round) == (run.workers, run.round)),
        None,
    )


def print_medians(runs: list[NightlyRun]) -> None:
    """With several rounds, each link's median ratio over them (a busy machine moves single
    rounds by a third)."""
    if len({r.round for r in runs}) < 2:
        return
    for workers in sorted({r.workers for r in runs}):
        for mode in TARGET_RATIO:
            ratios = [
                r.wall_s / local.wall_s
                for r in runs
                if r.mode == mode and r.workers == workers
                if (local := local_of(runs, r)) is not None and local.wall_s
            ]
            if ratios:
                median = statistics.median(ratios)
                target = TARGET_RATIO[mode]
                print(
                    f"{mode} -n {workers}: median {median:.2f}x local over {len(ratios)} rounds "
                    f"(target {target:.1f}x: {'met' if median <= target else 'NOT met'})"
                )


def print_table(runs: list[NightlyRun]) -> None:
    print(f"simulated nightly, default inventory, {os.cpu_count()} CPUs visible")
    header = (
        f"{'round':>5} {'mode':<7} {'-n':>3} {'cases':>6} {'passed':>6} {'failed':>6} {'error':>6} "
        f"{'skipped':>7} {'wall s':>7} {'cases/s':>8} {'÷ local':>8} {'target':>7} {'met':>4} "
        f"{'exit':>4}"
    )
    print(header)
    print("-" * len(header))
    for run in runs:
        local = local_of(runs, run)
        ratio, target, met = ratio_cell(run, local)
        o = run.outcomes
        print(
            f"{run.round:>5} {run.mode:<7} {run.workers:>3} {run.cases:>6} {o.get('passed', 0):>6} "
            f"{o.get('failed', 0):>6} {o.get('error', 0):>6} {o.get('skipped', 0):>7} "
            f"{run.wall_s:>7.1f} {run.rate:>8.1f} {ratio:>8} {target:>7} {met:>4} "
            f"{run.exit_code:>4}"
        )
    print_medians(runs)
    two = next((r for r in runs if r.mode == "local" and r.workers == 2), None)
    if two is not None:
        done = two.cases >= TARGET_CASES and two.wall_s <= TARGET_SECONDS
        print(
            f"local target (>= {TARGET_CASES} cases in <= {TARGET_SECONDS:.0f} s at -n 2): "
            f"{'met' if done else 'NOT met'} ({two.cases} cases in {two.wall_s:.1f} s)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--modes", default="local,ssh,serial", help="comma-separated: local, ssh, serial"
    )
    parser.add_argument("--workers", default="2", help="comma-separated -n values")
    parser.add_argument("--suite", type=Path, help="default: tests/hil under the cwd")
    parser.add_argument(
        "--rounds", type=int, default=1, help="run every mode this many times, interleaved"
    )
    parser.add_argument("--keep", action="store_true", help="keep the reports folders")
    args = parser.parse_args(argv)
    modes = parse_modes(args.modes)
    if "local" not in modes and any(m in TARGET_RATIO for m in modes):
        # the ratios are only meaningful against a local run measured now
        modes.insert(0, "local")
    counts = [int(w) for w in args.workers.split(",")]
    root = Path(tempfile.mkdtemp(prefix="bench-nightly-"))
    runs = []
    try:
        for round_ in range(1, max(1, args.rounds) + 1):
            for workers in counts:
                for mode in modes:
                    folder = root / f"{mode}-n{workers}-r{round_}"
                    runs.append(run_nightly(mode, workers, folder, args.suite, round_))
                    print(
                        f"  round {round_}: {mode} -n {workers}: {runs[-1].cases} cases, "
                        f"{runs[-1].wall_s:.1f} s",
                        file=sys.stderr,
                        flush=True,
                    )
    finally:
        if args.keep:
            print(f"reports kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print_table(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
