"""``npu-hil models build|install-compiler``: the reference models compiled for a real board, by
the compiler of the target's vendor (``Vendor.compiler``)."""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from npu_hil.harness.cli.common import count_up_to, print_json
from npu_hil.harness.files import check_regular
from npu_hil.harness.models import MODELS
from npu_hil.harness.models.compile_set import (
    MANIFEST_NAME,
    cached,
    compiled_tensor,
    compiler_for,
    plan,
    plan_files,
    record,
)
from npu_hil.harness.models.manifest import load_manifest
from npu_hil.targets.compiler import CompilerError, ModelCompiler, Normalize
from npu_hil.targets.registry import units

EXIT_BUILD_FAILED = 1


def _compilers() -> dict[str, ModelCompiler]:
    """Every vendor's compiler, by the targets it builds for (in the registry's order)."""
    return {t: u.compiler for u in units() if u.compiler is not None for t in u.targets}


def _each(texts: list[str], joined: str = " or ") -> str:
    return joined.join(dict.fromkeys(texts))


def add_parser(sub: Any) -> None:
    compilers = _compilers()
    kinds = list(dict.fromkeys(compilers.values()))
    models = sub.add_parser("models", help="compile the reference models for a real board")
    actions = models.add_subparsers(dest="action", required=True)

    build = actions.add_parser(
        "build",
        help=f"compile the reference models to {_each([c.suffix for c in kinds])} and write the "
        "model manifest",
        description=(
            "Compile every reference model, at the shapes the regression suite runs, with "
            f"{_each([c.described for c in kinds])}, one child process per model, "
            "and write OUT/manifest.json (merged with what it lists for other targets). Name "
            "that file as `manifest:` in the inventory."
        ),
    )
    build.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="MODEL.onnx",
        help="your own models (static shapes); without them, the reference models",
    )
    build.add_argument(
        "--target", required=True, nargs="+", choices=list(compilers), help="one or more"
    )
    build.add_argument("--models", nargs="+", choices=list(MODELS), default=None)
    build.add_argument(
        "--mean",
        type=_floats,
        help="per-channel mean baked into the compiled model, e.g. 123.675,116.28,103.53 "
        "(its input then takes raw uint8 pixels); with --std",
    )
    build.add_argument("--std", type=_floats, help="per-channel std, with --mean")
    build.add_argument(
        "--precision",
        choices=list(dict.fromkeys(p for c in kinds for p in c.precisions)),
        help=_each([c.precision_help for c in kinds], "; "),
    )
    build.add_argument(
        "--dataset",
        type=Path,
        help="int8 calibration: NCHW .npy files (NNN.npy, or NNN.<input>.npy), in "
        "DIR/<model>-<shape>/, DIR/<model>/ or DIR; default: a generated set",
    )
    build.add_argument("--out", type=Path, default=Path("build/models"))
    build.add_argument(
        "-j", "--jobs", type=count_up_to(MAX_JOBS), default=1, help="models compiled at once"
    )
    build.add_argument("--json", action="store_true")
    build.set_defaults(run=run_build)

    install = actions.add_parser(
        "install-compiler",
        help=f"install {_each([f'{c.toolkit} {c.version}' for c in kinds], ' and ')} without "
        "its pinned dependencies",
        description=" ".join(c.install_described for c in kinds),
    )
    install.set_defaults(run=run_install)


MAX_JOBS = 64
"""Compiler processes at once: each takes a few GiB, no host runs more."""


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected numbers separated by commas (one per channel), got {text!r}"
        ) from None
    if not values or len(values) > 4 or not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected 1 to 4 finite numbers, got {text!r}")
    return values


def run_install(args: argparse.Namespace) -> int:
    pip = "-m pip install --quiet --disable-pip-version-check --no-deps"
    for compiler in dict.fromkeys(_compilers().values()):
        command = [sys.executable, *pip.split(), f"{compiler.toolkit}=={compiler.version}"]
        done = subprocess.run(command, check=False)
        if done.returncode != 0:
            raise CompilerError(f"{' '.join(command[2:])} failed with status {done.returncode}")
        reason = compiler.probe()
        if reason is not None:
            raise CompilerError(f"{reason} {compiler.install_hint}")
        print(f"{compiler.toolkit} {compiler.version} installed and imports")
    return 0


def _normalize(args: argparse.Namespace) -> Normalize | None:
    if (args.mean is None) != (args.std is None):
        raise CompilerError("--mean and --std go together (one number per channel each)")
    if args.mean is None:
        return None
    if len(args.mean) != len(args.std) or any(v == 0 for v in args.std):
        raise CompilerError(
            f"--mean {list(args.mean)} and --std {list(args.std)}: one number per channel each, "
            "no std of 0"
        )
    return (args.mean, args.std)


def run_build(args: argparse.Namespace) -> int:
    targets: list[str] = list(dict.fromkeys(args.target))
    normalize = _normalize(args)
    if normalize is not None and not args.paths:
        raise CompilerError("--mean/--std apply to your own models (MODEL.onnx)")
    out: Path = args.out
    # The inputs first: a bad --dataset, model file or manifest is the same one-line error
    # whether or not the compiler is installed, and is found before minutes of compiling.
    for path in args.paths:
        check_regular(path, "the model (ONNX)")
    if args.dataset is not None:
        for target in targets:
            compiler_for(target).check_dataset(args.dataset)
    existing = out / MANIFEST_NAME
    if os.path.lexists(existing):
        load_manifest(check_regular(existing, "the model manifest (JSON)"))
    summaries = [_build_target(args, target, normalize) for target in targets]
    if args.json:
        print_json(summaries[0] if len(summaries) == 1 else {"builds": summaries})
    return EXIT_BUILD_FAILED if any(s["failed"] for s in summaries) else 0


def _build_target(
    args: argparse.Namespace, target: str, normalize: Normalize | None
) -> dict[str, Any]:
    compiler = compiler_for(target)
    precision: str = args.precision or compiler.default_precision(target)
    compiler.check_precision(target, precision)
    out: Path = args.out
    manifest_path = out / MANIFEST_NAME
    if args.paths:
        jobs = plan_files(
            target, precision, out, args.paths, dataset=args.dataset, normalize=normalize
        )
        names: dict[str, str] = {}  # a user's model is no reference model
    else:
        jobs = plan(target, precision, out, models=args.models, dataset=args.dataset)
        names = {job.key: job.key.rsplit("-", 1)[0] for job in jobs}
    fresh = [job for job in jobs if not cached(manifest_path, job)]
    if fresh:
        reason = compiler.probe()
        if reason is not None:
            raise CompilerError(reason)
    started = time.monotonic()
    results, failures = compiler.build(fresh, max(1, args.jobs)) if fresh else ([], [])
    manifest = record(manifest_path, results, names, [f.job for f in failures])
    reused = [job for job in jobs if job not in fresh]
    if not args.json:
        for job in reused:
            print(f"cached {job.key:<22} {job.artifact}")
        for result in results:
            native = "; ".join(
                f"{t.name} {list(t.native)} {t.size} B" for t in (*result.inputs, *result.outputs)
            )
            print(f"built  {result.job.key:<22} {result.job.artifact}  {native}")
        for failure in failures:
            print(f"FAILED {failure.message}", file=sys.stderr)
        print(
            f"{len(results)} built, {len(reused)} cached, {len(failures)} failed for {target} "
            f"({precision}) in {time.monotonic() - started:.1f} s; manifest: {manifest}"
        )
    return {
        "manifest": str(manifest),
        "target": target,
        "precision": precision,
        "built": {
            r.job.key: {
                compiler.artifact_key: str(r.job.artifact),
                "inputs": [compiled_tensor(t).to_dict() for t in r.inputs],
                "outputs": [compiled_tensor(t).to_dict() for t in r.outputs],
            }
            for r in results
        },
        "cached": {job.key: str(job.artifact) for job in reused},
        "failed": {f.job.key: f.message for f in failures},
    }
