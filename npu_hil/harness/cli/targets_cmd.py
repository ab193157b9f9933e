"""``npu-hil targets list|show|conv-check``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import zlib
from pathlib import Path
from typing import Any

from npu_hil.harness.cli.common import print_json
from npu_hil.harness.codec import known_targets, layout_names
from npu_hil.harness.errors import LayoutError
from npu_hil.harness.files import MAX_JSON_BYTES, read_regular
from npu_hil.targets import check_conv, tables_text
from npu_hil.targets.registry import units

KINDS = ("conv", "depthwise", "deconv")


OBSERVATIONS = "check_observations"
"""The ``Vendor.extras`` hook: records of observed runtime answers → a summary of the check."""


def add_parser(sub: Any) -> None:
    targets = sub.add_parser("targets", help="the targets and their seed tables")
    actions = targets.add_subparsers(dest="action", required=True)

    listing = actions.add_parser("list", help="every target and its layouts")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(run=run_list)

    show = actions.add_parser("show", help="a target's tables, readable")
    show.add_argument("target")
    show.set_defaults(run=run_show)

    offering = ", ".join(u.name for u in units() if OBSERVATIONS in u.extras)
    observed = actions.add_parser(
        "observed",
        help=f"hold the codec to a file of a runtime's observed answers ({offering})",
    )
    observed.add_argument(
        "file",
        type=Path,
        help="observations (.json or .json.gz), as the vendor's observation grid writes them",
    )
    observed.add_argument("--verbose", action="store_true", help="list every refusal and miss")
    observed.add_argument("--json", action="store_true")
    observed.set_defaults(run=run_observed)

    conv = actions.add_parser("conv-check", help="check a convolution against the width rules")
    conv.add_argument("--target", required=True)
    conv.add_argument("--width", required=True, type=int)
    conv.add_argument("--kernel", required=True, help="HxW, e.g. 3x3")
    conv.add_argument("--dilation", default="1x1", help="HxW, default 1x1")
    conv.add_argument("--kind", choices=KINDS, default="conv")
    conv.add_argument("--rule", choices=("A", "B"), default=None)
    conv.add_argument("--first-layer", choices=("int8", "float16"), default="int8")
    conv.add_argument("--json", action="store_true")
    conv.set_defaults(run=run_conv_check)


def _pair(flag: str, text: str) -> tuple[int, int]:
    parts = text.lower().split("x")
    try:
        h, w = (int(p) for p in parts)
    except ValueError as exc:
        raise LayoutError(f"{flag}: expected HxW like 3x3, got {text!r}") from exc
    return h, w


def run_list(args: argparse.Namespace) -> int:
    rows = {target: list(layout_names(target)) for target in known_targets()}
    if args.json:
        print_json(rows)
        return 0
    for target, names in rows.items():
        print(f"{target:<10} {' '.join(names)}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    print(tables_text(args.target))
    return 0


def run_conv_check(args: argparse.Namespace) -> int:
    result = check_conv(
        args.target,
        args.width,
        _pair("--kernel", args.kernel),
        _pair("--dilation", args.dilation),
        kind=args.kind,
        rule=args.rule,
        first_layer=args.first_layer,
    )
    if args.json:
        print_json(dataclasses.asdict(result))
    else:
        print(result.message)
        for condition in result.conditions:
            print(f"  {'ok  ' if condition.ok else 'FAIL'} {condition.text}")
    return 0 if result.ok else 1


def _gunzip(raw: bytes, path: Path) -> bytes:
    """gzip, inflated to at most MAX_JSON_BYTES (a small bomb must not become gigabytes)."""
    inflate = zlib.decompressobj(wbits=31)
    text = inflate.decompress(raw, MAX_JSON_BYTES)
    if inflate.unconsumed_tail:
        raise LayoutError(f"{path}: inflates to more than {MAX_JSON_BYTES} bytes")
    return text


def run_observed(args: argparse.Namespace) -> int:
    checks = [u.extras[OBSERVATIONS] for u in units() if OBSERVATIONS in u.extras]
    if not checks:
        raise LayoutError("no vendor unit checks a file of observed runtime answers")
    check_observations = checks[0]
    path = args.file
    raw = bytes(read_regular(path, "observations (.json or .json.gz)", MAX_JSON_BYTES))
    try:
        text = _gunzip(raw, path) if raw[:2] == b"\x1f\x8b" else raw
        records = json.loads(text)
    except (ValueError, EOFError, OSError, RecursionError) as exc:
        raise LayoutError(f"{path}: cannot read observations: {exc}") from None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise LayoutError(f"{path}: expected a JSON list of records (objects)")
    try:
        summary = check_observations(records)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise LayoutError(f"{path}: a record lacks what the check needs: {exc!r}") from None
    if not summary["attribute_sets"] or not summary["models"]:
        raise LayoutError(f"{path}: no record carries the runtime's answers (runtime.*_ATTR)")
    if args.json:
        print_json(summary)
        return 0
    sets, models = summary["attribute_sets"], summary["models"]
    print(f"{path}: {models} models with runtime answers, {sets} attribute sets")
    print(f"  accepted   {summary['accepted']:5d} / {sets}  ({summary['accepted'] / sets:.1%})")
    print(f"  placed     {summary['placed']:5d} / {sets}  (where the vendor's loops read them)")
    exact = summary["predicted_exactly"]
    print(f"  predicted  {exact:5d} / {models} models exactly ({exact / models:.1%})")
    shown = (summary["refused"], summary["misses"]) if args.verbose else ([], [])
    for title, rows in (("refused", shown[0]), ("differs", shown[1])):
        for row in rows:
            print(f"  {title}: {row}")
    return 0
