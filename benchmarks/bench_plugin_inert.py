"""What the installed plugin costs a run of someone else's tests: none of them uses a board.

    python benchmarks/bench_plugin_inert.py                  # 200 plain tests, 9 rounds
    python benchmarks/bench_plugin_inert.py --tests 2000 --rounds 5

A throwaway suite of plain tests (its own pytest.ini, so no conftest of this repository applies)
runs under ``python -m pytest -q`` with the plugin and with ``-p no:npu_hil``, interleaved (ABBA,
after one warm-up run each). The baseline is the run without the plugin, measured in the same
rounds. CPU time (user + system of the child) is the figure: each side's least disturbed run, as
timeit reads it, and the medians beside it. The same suite's count of calls into the package is
held by tests/plugin/test_plugin_inert.py, which does not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PER_MODULE = 20


def write_suite(root: Path, tests: int) -> None:
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for number in range(max(1, tests // PER_MODULE)):
        body = "".join(
            f"def test_{i}():\n    assert {i} + 1 > {i}\n\n\n" for i in range(PER_MODULE)
        )
        (root / f"test_plain_{number}.py").write_text(body, encoding="utf-8")


def run_once(suite: Path, with_plugin: bool) -> tuple[float, float]:
    """One run of the suite: its wall and CPU seconds."""
    args = [] if with_plugin else ["-p", "no:npu_hil"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=suite,
        env=env,
        capture_output=True,
        check=True,
        timeout=600,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="npu-hil-bench-inert-") as folder:
        suite = Path(folder)
        write_suite(suite, args.tests)
        for side in (True, False):
            run_once(suite, side)  # warm: bytecode, the OS's file cache
        walls: dict[bool, list[float]] = {True: [], False: []}
        cpus: dict[bool, list[float]] = {True: [], False: []}
        for number in range(args.rounds):
            for side in (True, False) if number % 2 == 0 else (False, True):
                wall, cpu = run_once(suite, side)
                walls[side].append(wall)
                cpus[side].append(cpu)
    best_on, best_off = min(cpus[True]), min(cpus[False])
    print(f"{args.rounds} rounds of {args.tests} plain tests; python {sys.version.split()[0]}")
    print("| figure | with the plugin | -p no:npu_hil (baseline) | ratio | added |")
    print("|---|---|---|---|---|")
    rows = (
        ("CPU, best run", best_on, best_off),
        ("CPU, median", statistics.median(cpus[True]), statistics.median(cpus[False])),
        ("wall, median", statistics.median(walls[True]), statistics.median(walls[False])),
    )
    for name, on, off in rows:
        print(f"| {name} | {on:.3f} s | {off:.3f} s | {on / off:.3f} | {on - off:+.3f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
