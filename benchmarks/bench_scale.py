"""The simulated nightly at 15, 50 and 200 boards, on one worker and on two.

    python benchmarks/bench_scale.py [--boards 15,50,200] [--workers 0,2] [--keep]

Each point is ``npu-hil nightly`` on an inventory of that many simulated boards (the 15 targets
in turn: ``rk3588-01``, ..., ``rk3588-14``), run as the farm job runs it, into a throwaway
reports folder and with its own private ``TMPDIR`` (so the scratch it leaves can be counted). A
sampler walks the run's process tree every 0.2 s through ``/proc`` and prints per point:

- cases, wall time and wall time per case;
- peak memory of the whole tree (sum of PSS, which shares the pages of the many agents fairly),
  of the largest single process and of the pytest controller (RSS), and the agents' peak
  together;
- agents started (distinct ``--serve`` processes seen) and the most alive at once;
- bookkeeping: from the last record appended to ``records.jsonl`` (the last case's end) to the
  run's exit: the report, the history, the comparison;
- scratch left: the ``npu-hil-jobs-*`` folders still in the run's TMPDIR after it exited;
- cores: the machine's CPU time (user and system, ``/proc/stat``) over the wall time: on an
  idle machine, how many cores the run kept busy (with two cores, ``-n 2`` can be at most
  2 / that of ``-n 0`` times faster). Not the tree's own CPU time as its parents collect it:
  that misses every process no parent waits for (xdist's workers, the agents a worker closes as
  it exits).

Then, per board count, the ratio of the two-worker wall time to the one-worker one, measured in
the same invocation. Goals (issue "Fast and flat at scale"): 200 boards at -n 2 within 4 GB for
the whole tree, the controller under 500 MB, -n 2 at least 1.5x faster than -n 0, bookkeeping
under 5 s, no scratch left.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

SAMPLE_S = 0.2
GOAL_TREE_BYTES = 4 << 30
GOAL_SPEEDUP = 1.5
GOAL_BOOKKEEPING_S = 5.0
GOAL_CONTROLLER_BYTES = 500 << 20


def write_inventory(path: Path, boards: int) -> None:
    from npu_hil.harness.farm.starter import builtin_inventory

    # The targets in the order of the built-in farm: one board each, then a second round...
    targets = [board.target for board in builtin_inventory().boards]
    lines = ["defaults: {backend: sim, fallback: sim, transport: local}", "boards:"]
    for index in range(boards):
        target = targets[index % len(targets)]
        lines.append(f"  - {{name: {target}-{index // len(targets) + 1:02d}, target: {target}}}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        parent = int(raw[raw.rfind(")") + 2 :].split()[1])
        tree.setdefault(parent, []).append(int(entry))
    return tree


def _descendants(root: int) -> list[int]:
    tree = _children()
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(tree.get(pid, []))
    return found


def _kib(pid: int, path: str, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/{path}").read_text(encoding="ascii").splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _machine_cpu_s() -> float:
    """CPU seconds the machine has spent, all cores, in user and system time (``/proc/stat``'s
    first line: user, nice, system, then idle and iowait, which are not counted)."""
    fields = Path("/proc/stat").read_text(encoding="ascii").split("\n", 1)[0].split()[1:]
    ticks = [int(f) for f in fields]
    busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]  # and irq, softirq
    return busy / os.sysconf("SC_CLK_TCK")


def _is_controller(pid: int) -> bool:
    """The pytest process the nightly runs (with -n, the xdist controller; execnet starts the
    workers with ``python -c``)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return argv[1:3] == [b"-m", b"pytest"]


def _is_agent(pid: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"--serve" in argv and b"--root" in argv


@dataclass
class Sampler:
    root: int
    records: Path
    tree_pss_kib: int = 0
    largest_rss_kib: int = 0
    controller_rss_kib: int = 0
    agents_pss_kib: int = 0
    agents_seen: set[int] = field(default_factory=set)
    agents_alive: int = 0
    last_record_at: float = 0.0
    _size: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(SAMPLE_S)

    def sample(self) -> None:
        pids = _descendants(self.root)
        agents = [p for p in pids if _is_agent(p)]
        pss = {p: _kib(p, "smaps_rollup", "Pss:") for p in pids}
        self.tree_pss_kib = max(self.tree_pss_kib, sum(pss.values()))
        self.largest_rss_kib = max(
            self.largest_rss_kib, max((_kib(p, "status", "VmRSS:") for p in pids), default=0)
        )
        self.agents_pss_kib = max(self.agents_pss_kib, sum(pss[p] for p in agents))
        controller = max(
            (_kib(p, "status", "VmRSS:") for p in pids if _is_controller(p)), default=0
        )
        self.controller_rss_kib = max(self.controller_rss_kib, controller)
        self.agents_seen.update(agents)
        self.agents_alive = max(self.agents_alive, len(agents))
        for found in self.records.parent.glob("*/records.jsonl"):
            size = found.stat().st_size
            if size != self._size:
                self._size, self.last_record_at = size, time.perf_counter()

    def stop(self) -> None:
        self._stop.set()


@dataclass
class Point:
    boards: int
    workers: int
    exit_code: int
    cases: int
    wall_s: float
    sampler: Sampler
    ended_at: float
    scratch_left: int
    cores_busy: float  # the machine's CPU time over the wall time

    @property
    def bookkeeping_s(self) -> float:
        last = self.sampler.last_record_at
        return self.ended_at - last if last else float("nan")


def run_point(boards: int, workers: int, keep: bool) -> Point:
    base = Path(tempfile.mkdtemp(prefix="npu-hil-scale-"))
    inventory, reports, scratch = base / "inventory.yaml", base / "reports", base / "tmp"
    scratch.mkdir(mode=0o700)
    write_inventory(inventory, boards)
    cmd = [sys.executable, "-m", "npu_hil.harness.cli.main", "nightly"]
    cmd += ["--inventory", str(inventory), "--reports", str(reports)]
    if workers:
        cmd += ["-n", str(workers)]
    env = dict(os.environ, TMPDIR=str(scratch), XDG_CACHE_HOME=str(base / "cache"))
    started = time.perf_counter()
    cpu_before = _machine_cpu_s()
    proc = subprocess.Popen(
        cmd, cwd=base, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    sampler = Sampler(proc.pid, reports / "records.jsonl")
    thread = threading.Thread(target=sampler.run, daemon=True)
    thread.start()
    output, _ = proc.communicate()
    ended = time.perf_counter()
    cpu_s = _machine_cpu_s() - cpu_before
    sampler.stop()
    thread.join()
    cases = sum(
        sum(1 for line in found.read_bytes().splitlines() if line.strip())
        for found in reports.glob("*/records.jsonl")
    )
    if proc.returncode not in (0, 1) or not cases:
        sys.stderr.write(output.decode("utf-8", "replace")[-3000:])
    left = len(list(scratch.glob("npu-hil-jobs-*")))
    if not keep:
        shutil.rmtree(base, ignore_errors=True)
    wall = ended - started
    return Point(boards, workers, proc.returncode, cases, wall, sampler, ended, left, cpu_s / wall)


def _mib(kib: int) -> str:
    return f"{kib / 1024:,.0f} MiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boards", default="15,50,200")
    parser.add_argument("--workers", default="0,2")
    parser.add_argument("--keep", action="store_true", help="keep each point's folder")
    args = parser.parse_args(argv)
    board_counts = [int(n) for n in args.boards.split(",")]
    worker_counts = [int(n) for n in args.workers.split(",")]
    print(
        f"{'boards':>6} {'-n':>3} {'exit':>4} {'cases':>6} {'wall':>8} {'per case':>9} "
        f"{'tree PSS':>10} {'largest':>9} {'controller':>10} {'agents PSS':>11} "
        f"{'agents':>7} {'alive':>6} {'bookkeeping':>11} {'scratch':>7} {'cores':>5}"
    )
    points: list[Point] = []
    for boards in board_counts:
        for workers in worker_counts:
            p = run_point(boards, workers, args.keep)
            points.append(p)
            s = p.sampler
            per_case = p.wall_s / p.cases * 1000 if p.cases else float("nan")
            print(
                f"{boards:>6} {workers:>3} {p.exit_code:>4} {p.cases:>6} {p.wall_s:>7.1f}s "
                f"{per_case:>7.1f}ms {_mib(s.tree_pss_kib):>10} {_mib(s.largest_rss_kib):>9} "
                f"{_mib(s.controller_rss_kib):>10} "
                f"{_mib(s.agents_pss_kib):>11} {len(s.agents_seen):>7} {s.agents_alive:>6} "
                f"{p.bookkeeping_s:>10.1f}s {p.scratch_left:>7} {p.cores_busy:>5.2f}",
                flush=True,
            )
    print()
    for boards in board_counts:
        walls = {p.workers: p.wall_s for p in points if p.boards == boards}
        if 0 in walls and 2 in walls and walls[2]:
            speedup = walls[0] / walls[2]
            verdict = "met" if speedup >= GOAL_SPEEDUP else "not met"
            print(
                f"{boards} boards: -n 0 / -n 2 = {speedup:.2f}x ({verdict}, goal {GOAL_SPEEDUP}x)"
            )
    for p in points:
        misses = []
        if p.sampler.tree_pss_kib * 1024 > GOAL_TREE_BYTES:
            misses.append("tree memory over 4 GB")
        if p.sampler.controller_rss_kib * 1024 > GOAL_CONTROLLER_BYTES:
            misses.append(f"controller {_mib(p.sampler.controller_rss_kib)}")
        if not p.bookkeeping_s <= GOAL_BOOKKEEPING_S:
            misses.append(f"bookkeeping {p.bookkeeping_s:.1f} s")
        if p.scratch_left:
            misses.append(f"{p.scratch_left} scratch folders left")
        if misses:
            print(f"{p.boards} boards, -n {p.workers}: " + "; ".join(misses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
