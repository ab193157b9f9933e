"""``npu-hil diff``: a device buffer against the codec's expectation; exit 0 equal, 1 different."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from npu_hil.harness.board.job import JobRefused, check_canary
from npu_hil.harness.cli.codec_cmd import read_buffer
from npu_hil.harness.cli.common import (
    add_layout_args,
    layout_from_args,
    number_from_zero,
    parse_shape,
)
from npu_hil.harness.diff import diff_buffers
from npu_hil.harness.diff.heatmap import render_heatmap
from npu_hil.harness.errors import LayoutError
from npu_hil.harness.files import load_npy


def add_parser(sub: Any) -> None:
    diff = sub.add_parser("diff", help="diff a device buffer against the expected tensor")
    add_layout_args(diff)
    source = diff.add_mutually_exclusive_group(required=True)
    source.add_argument("--expected", type=Path, help="the expected logical tensor (.npy)")
    source.add_argument("--expected-bin", type=Path, help="the expected packed buffer (.bin)")
    diff.add_argument("--device", required=True, type=Path, help="the device's raw buffer (.bin)")
    diff.add_argument(
        "--tolerance",
        type=number_from_zero(sys.float_info.max, "a finite number >= 0"),
        default=0,
        help="± in value units (default 0)",
    )
    diff.add_argument("--padding", choices=("zero", "ignore", "exact"), default="zero")
    diff.add_argument(
        "--canary",
        type=_canary,
        help="hex pattern the device buffer was filled with before the run (job.json's canary): "
        "bytes still holding it are reported unwritten",
    )
    diff.add_argument("--json", action="store_true")
    diff.add_argument("--png", type=Path, help="write a heatmap of the mismatches here")
    diff.set_defaults(run=run_diff)


def _canary(text: str) -> bytes:
    try:
        pattern = check_canary("--canary", text.lower())
    except JobRefused as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    assert pattern is not None
    return pattern


def run_diff(args: argparse.Namespace) -> int:
    layout = layout_from_args(args, parse_shape(args.shape), args.dtype)
    if args.expected is not None:
        expected: Any = load_npy(args.expected)
        if expected.shape != layout.shape:
            raise LayoutError(
                f"{args.expected}: holds shape {expected.shape}, --shape says {layout.shape}"
            )
        if expected.dtype != layout.dtype:
            expected = _cast_exactly(expected, layout.dtype, args.expected)
    else:
        expected = read_buffer(
            args.expected_bin, layout, f"the packed {layout.nbytes}-byte expected buffer"
        )
    device = read_buffer(args.device, layout, "the device's buffer", slack=True)
    report = diff_buffers(
        layout,
        expected,
        device,
        tolerance=args.tolerance,
        padding=args.padding,
        canary=args.canary,
    )
    if args.png is not None:
        render_heatmap(report, layout, args.png)
    if args.json:
        print(report.to_json())
    else:
        print(report.summary())
    return 0 if report.ok else 1


def _cast_exactly(array: np.ndarray, dtype: np.dtype, path: Path) -> np.ndarray:
    """Accept an .npy of another dtype only when every value survives the cast unchanged."""
    # NaN, infinities and complex values do not survive: numpy's warnings about them are the
    # refusal below, not extra lines on stderr.
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cast = array.astype(dtype)
        same = np.array_equal(cast.astype(array.dtype), array)
    if not same:
        raise LayoutError(
            f"{path}: holds {array.dtype.name} values that do not fit {dtype.name} exactly"
        )
    return cast
