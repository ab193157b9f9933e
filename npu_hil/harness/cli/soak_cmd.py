"""``npu-hil soak``: models looped on boards, judged on a bounded leak slope and error rate
(docs/farm/health.md). Exit 0 passed, 1 failed (each reason printed), 2 bad input."""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from typing_extensions import TypedDict

from npu_hil.harness.cli.common import add_board_args, load_cli_inventory, parse_shape
from npu_hil.harness.errors import NpuHilError

if TYPE_CHECKING:
    from npu_hil.harness.report.runmeta import RunMeta
    from npu_hil.harness.soak.fit import FitDocument
    from npu_hil.harness.soak.report import SoakDocument
    from npu_hil.harness.soak.verdict import ErrorRate


PROGRESS_EVERY_S = 10.0


class SoakUsageError(NpuHilError):
    """A soak asked for with options that do not hold together."""


WEEK_S = 7 * 24 * 3600
MAX_CONTEXTS = 64
"""Agents per board at once: more than any NPU runs contexts side by side."""
MAX_ITERATIONS = 10**9
MAX_SHAPE_ELEMENTS = 1 << 26
"""A soak input of 64 Mi elements (256 MiB as float32): larger is a typo, not a soak."""


def _positive(kind: type, what: str, most: float) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{what}: expected a number, got {text[:40]!r}"
            ) from None
        if not 0 < value <= most:  # also refuses nan and inf
            raise argparse.ArgumentTypeError(
                f"{what}: expected more than 0 and at most {most:g}, got {text[:40]!r}"
            )
        return value

    return parse


def add_parser(sub: Any) -> None:
    from npu_hil.harness.models import MODELS

    soak = sub.add_parser(
        "soak",
        help="loop models on boards for hours and judge memory growth and the error rate",
        description="Run the chosen models over and over on the chosen boards with several "
        "contexts at once; sample each agent's RSS and the board's CMA / DMA-buffer figures; "
        "pass on a bounded leak slope (Theil-Sen, after a warm-up) and error rate.",
    )
    add_board_args(soak, sim_fault="a simulated board, e.g. NAME=leak:kib=64")
    soak.add_argument("--backend", choices=("auto", "sim", "hw"), default="auto")
    soak.add_argument(
        "--model",
        action="append",
        default=[],
        choices=sorted(MODELS),
        help="reference model(s) run in turn (default: conv1x1)",
    )
    soak.add_argument("--shape", default="1,3,8,8", help="the models' input shape")
    length = soak.add_mutually_exclusive_group(required=True)
    length.add_argument("--hours", type=_positive(float, "--hours", WEEK_S / 3600))
    length.add_argument("--minutes", type=_positive(float, "--minutes", WEEK_S / 60))
    length.add_argument("--seconds", type=_positive(float, "--seconds", WEEK_S))
    length.add_argument(
        "--iterations",
        type=_positive(int, "--iterations", MAX_ITERATIONS),
        help="jobs per context",
    )
    soak.add_argument(
        "--contexts",
        type=_positive(int, "--contexts", MAX_CONTEXTS),
        default=2,
        help="agents (runtime contexts) per board running at once (default 2)",
    )
    soak.add_argument(
        "--sample-every",
        type=_positive(float, "--sample-every", 3600),
        default=10.0,
        metavar="SECONDS",
        help="memory sampling period (default 10 s)",
    )
    for flag, metavar, text in (
        (
            "--max-leak-kib-per-1k",
            "KIB",
            "bound on an agent's memory growth per 1000 jobs (default 4096; not judged when only "
            "--max-leak-kib-per-hour is given)",
        ),
        ("--max-leak-kib-per-hour", "KIB", "bound on memory growth per hour (default: not judged)"),
        ("--max-error-rate", "SHARE", "failed jobs / jobs allowed per board (default 0.01)"),
        (
            "--warmup-share",
            "SHARE",
            "share of each memory series left out of the fit (default 0.2)",
        ),
    ):
        soak.add_argument(flag, type=float, metavar=metavar, help=text)
    soak.add_argument("--reports", type=Path, default=Path("reports"), help="reports root")
    soak.add_argument("--workdir", type=Path, help="the farm's workdir (locks, simulated boards)")
    soak.add_argument("--json", action="store_true", help="print the outcome as JSON")
    soak.set_defaults(run=run_soak)


def _seconds(args: argparse.Namespace) -> float | None:
    for given, scale in ((args.hours, 3600.0), (args.minutes, 60.0), (args.seconds, 1.0)):
        if given is not None:
            return float(given) * scale
    return None


def _bounds(args: argparse.Namespace) -> Any:
    from npu_hil.harness.soak import Bounds

    names = ("max_leak_kib_per_1k", "max_leak_kib_per_hour", "max_error_rate", "warmup_share")
    given = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    if args.max_leak_kib_per_hour is not None and args.max_leak_kib_per_1k is None:
        given["max_leak_kib_per_1k"] = None  # the one bound asked for
    try:
        return Bounds(**given)
    except ValueError as exc:
        raise SoakUsageError(f"soak: {exc}") from None


def _progress(started: float) -> Any:
    last = [0.0]

    def show(run: Any) -> None:
        now = time.monotonic()
        if now - last[0] < PROGRESS_EVERY_S:
            return
        last[0] = now
        done = ", ".join(f"{p.board} {p.jobs} jobs / {p.errors} failed" for p in run.boards)
        print(f"npu-hil soak: {now - started:.0f} s: {done}", file=sys.stderr, flush=True)

    return show


class Slope(TypedDict):
    """A memory series' slopes in ``npu-hil soak --json``'s ``slopes``."""

    board: str
    context: int | None
    metric: str
    kib_per_1k_jobs: FitDocument | None
    kib_per_hour: FitDocument | None
    problem: str | None
    failed: list[str]


class SoakOutcome(TypedDict):
    """What ``npu-hil soak --json`` prints: the verdict, the report folder and the slopes."""

    passed: bool
    reasons: list[str]
    report: str
    elapsed_s: float
    error_rates: dict[str, ErrorRate]
    slopes: list[Slope]


_NOT_SLOPE = ("pid", "samples", "warmup_dropped")


def _outcome(folder: Path, document: SoakDocument) -> SoakOutcome:
    verdict = document["verdict"]
    return {
        "passed": verdict["passed"],
        "reasons": verdict["reasons"],
        "report": str(folder),
        "elapsed_s": document["elapsed_s"],
        "error_rates": verdict["error_rates"],
        # each series without its pid, samples and warm-up (soak.json has them)
        "slopes": [
            cast(Slope, {k: v for k, v in s.items() if k not in _NOT_SLOPE})
            for s in verdict["series"]
        ],
    }


def _shape(text: str) -> tuple[int, ...]:
    shape = parse_shape(text)
    if not shape or min(shape) < 1 or math.prod(shape) > MAX_SHAPE_ELEMENTS:
        raise SoakUsageError(
            f"soak: --shape: expected positive dimensions of at most {MAX_SHAPE_ELEMENTS} "
            f"elements in all, got {text[:60]!r}"
        )
    return shape


def run_soak(args: argparse.Namespace) -> int:
    from npu_hil.harness.farm import Farm
    from npu_hil.harness.pipeline.golden import golden_job
    from npu_hil.harness.plugin.sim_faults import (
        faults_by_board,
        parse_board_faults,
        selection_problems,
    )
    from npu_hil.harness.soak import SoakPlan, judge, soak
    from npu_hil.harness.soak.report import JSON_FILE, write_soak_report

    if not args.board and not args.target:
        raise SoakUsageError("soak: choose the boards to soak with --board NAME or --target SOC")
    bounds = _bounds(args)
    faults = parse_board_faults(args.sim_fault)
    inventory = load_cli_inventory(args.inventory)
    problem = selection_problems(inventory, args.target, args.board, args.backend, faults)
    if problem is not None:
        raise SoakUsageError(problem)
    plan = SoakPlan(
        models=tuple(dict.fromkeys(args.model or ["conv1x1"])),
        contexts=int(args.contexts),
        seconds=_seconds(args),
        iterations=args.iterations,
        sample_every_s=float(args.sample_every),
        shape=_shape(args.shape),
    )
    # Ctrl-C (and SIGTERM) stop every context after its current job and the report is still
    # written: even when the soak was started with SIGINT ignored (a background job of a
    # non-interactive shell inherits that, and Python keeps it).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from npu_hil.harness.plugin.interrupt import sigterm_interrupts

    sigterm_interrupts()
    started = time.monotonic()
    with Farm(
        inventory,
        backend=args.backend,
        workdir=args.workdir,
        sim_faults=faults_by_board(faults),
        health_job=golden_job,
    ) as farm:
        boards = farm.boards(targets=args.target or None, names=args.board or None)
        if not boards:
            raise SoakUsageError(f"soak: no board of {inventory.source} matches the selection")
        run = soak(farm, boards, plan, on_progress=_progress(started))
    verdict = judge(run, bounds)
    meta: RunMeta = {
        "argv": sys.argv[1:],
        "sim_faults": [f.to_dict() for f in faults],
        "inventory": str(inventory.source),
    }
    folder = write_soak_report(args.reports, run, verdict, meta)
    # the document this command has just written (soak_document)
    document = cast("SoakDocument", json.loads((folder / JSON_FILE).read_text(encoding="utf-8")))
    if args.json:
        print(json.dumps(_outcome(folder, document), indent=1))
    else:
        state = "PASSED" if verdict.passed else "FAILED"
        print(f"npu-hil soak {state} after {run.elapsed_s:.0f} s")
        for board, rate in verdict.error_rates.items():
            print(f"  {board}: {rate['jobs']} jobs, {rate['errors']} failed")
        for series in verdict.series:
            fit = series.per_1k
            if fit is not None:
                who = "board" if series.context is None else f"context {series.context}"
                print(
                    f"  {series.board} {who} {series.metric}: {fit.slope:.1f} KiB / 1000 jobs "
                    f"[{fit.low:.1f}, {fit.high:.1f}]"
                )
        for reason in verdict.reasons:
            print(f"  FAILED: {reason}")
        print(f"report: {(folder / 'soak.html').resolve()}")
    return 0 if verdict.passed else 1
