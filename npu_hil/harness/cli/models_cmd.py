"""``npu-hil models build|install-compiler``: the reference models compiled for a real board."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from npu_hil.harness.cli.common import print_json
from npu_hil.harness.inputs import check_regular
from npu_hil.harness.models import MODELS
from npu_hil.harness.models.compile_set import MANIFEST_NAME, compiled_tensor, plan, record
from npu_hil.harness.models.manifest import load_manifest
from npu_hil.targets import rockchip
from npu_hil.targets.rockchip.compiler.build import (
    TOOLKIT,
    TOOLKIT_VERSION,
    BuildFailure,
    BuildResult,
    CompilerError,
    build_all,
    check_dataset,
    check_precision,
    default_precision,
    probe,
)

EXIT_BUILD_FAILED = 1


def add_parser(sub: Any) -> None:
    models = sub.add_parser("models", help="compile the reference models for a real board")
    actions = models.add_subparsers(dest="action", required=True)

    build = actions.add_parser(
        "build",
        help="compile the reference models to .rknn and write the model manifest",
        description=(
            "Compile every reference model, at the shapes the regression suite runs, with "
            f"Rockchip's compiler ({TOOLKIT}, the `rknn` extra), one child process per model, "
            "and write OUT/manifest.json (merged with what it lists for other targets). Name "
            "that file as `manifest:` in the inventory."
        ),
    )
    build.add_argument("--target", required=True, choices=rockchip.TARGETS)
    build.add_argument("--models", nargs="+", choices=list(MODELS), default=None)
    build.add_argument(
        "--precision",
        choices=("int8", "float16"),
        default=None,
        help="default: int8, or float16 on RK2118 (which builds nothing else)",
    )
    build.add_argument(
        "--dataset",
        type=Path,
        default=None,
        help="int8 calibration: NCHW .npy files (NNN.npy, or NNN.<input>.npy), in "
        "DIR/<model>-<shape>/, DIR/<model>/ or DIR; default: a generated set",
    )
    build.add_argument("--out", type=Path, default=Path("build/models"))
    build.add_argument("-j", "--jobs", type=_jobs, default=1, help="models compiled at once")
    build.add_argument("--json", action="store_true")
    build.set_defaults(run=run_build)

    install = actions.add_parser(
        "install-compiler",
        help=f"install {TOOLKIT} {TOOLKIT_VERSION} without its pinned dependencies",
        description=(
            f"pip install --no-deps {TOOLKIT}=={TOOLKIT_VERSION}: the `rknn` extra brings the "
            "dependencies its ONNX path imports (a CPU torch instead of its torch<=2.4.0 pin), "
            "which pip extras cannot say. Then checks that it imports."
        ),
    )
    install.set_defaults(run=run_install)


MAX_JOBS = 64
"""Compiler processes at once: each takes a few GiB, no host runs more."""


def _jobs(text: str) -> int:
    value = int(text) if text.isascii() and text.isdigit() and len(text) < 6 else 0
    if not 1 <= value <= MAX_JOBS:
        raise argparse.ArgumentTypeError(f"expected an integer from 1 to {MAX_JOBS}, got {text!r}")
    return value


def run_install(args: argparse.Namespace) -> int:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        f"{TOOLKIT}=={TOOLKIT_VERSION}",
    ]
    done = subprocess.run(command, check=False)
    if done.returncode != 0:
        raise CompilerError(f"{' '.join(command[2:])} failed with status {done.returncode}")
    reason = probe()
    if reason is not None:
        raise CompilerError(f"{reason} (install the `rknn` extra: pip install 'npu-hil[rknn]')")
    print(f"{TOOLKIT} {TOOLKIT_VERSION} installed and imports")
    return 0


def run_build(args: argparse.Namespace) -> int:
    target: str = args.target
    precision: str = args.precision or default_precision(target)
    check_precision(target, precision)
    out: Path = args.out
    # The inputs first: a bad --dataset or manifest is the same one-line error whether or not
    # the compiler is installed, and is found before minutes of compiling.
    if args.dataset is not None:
        check_dataset(args.dataset)
    existing = out / MANIFEST_NAME
    if os.path.lexists(existing):
        load_manifest(check_regular(existing, "the model manifest (JSON)"))
    reason = probe()
    if reason is not None:
        raise CompilerError(reason)
    jobs = plan(target, precision, out, models=args.models, dataset=args.dataset)
    started = time.monotonic()
    outcomes = build_all(jobs, parallel=max(1, args.jobs))
    results = [o for o in outcomes if isinstance(o, BuildResult)]
    failures = [o for o in outcomes if isinstance(o, BuildFailure)]
    names = {job.key: job.key.rsplit("-", 1)[0] for job in jobs}
    manifest = record(out / MANIFEST_NAME, results, names, [f.job for f in failures])
    if args.json:
        print_json(
            {
                "manifest": str(manifest),
                "target": target,
                "precision": precision,
                "built": {
                    r.job.key: {
                        "rknn": str(r.job.rknn),
                        "inputs": [compiled_tensor(t).to_dict() for t in r.inputs],
                        "outputs": [compiled_tensor(t).to_dict() for t in r.outputs],
                    }
                    for r in results
                },
                "failed": {f.job.key: f.message for f in failures},
            }
        )
    else:
        for result in results:
            native = "; ".join(
                f"{t.name} {list(t.native)} {t.size} B" for t in (*result.inputs, *result.outputs)
            )
            print(f"built  {result.job.key:<22} {result.job.rknn}  {native}")
        for failure in failures:
            print(f"FAILED {failure.message}", file=sys.stderr)
        print(
            f"{len(results)} built, {len(failures)} failed for {target} ({precision}) in "
            f"{time.monotonic() - started:.1f} s; manifest: {manifest}"
        )
    return EXIT_BUILD_FAILED if failures else 0
