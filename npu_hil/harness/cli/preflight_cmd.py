"""``npu-hil preflight``: exit 0 when the model passes, 1 when it violates a rule, 2 bad input."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from npu_hil.harness.cli.common import print_json
from npu_hil.harness.preflight import preflight


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "preflight",
        help="check an ONNX model against a target's tables, or a compiled model's "
        "compatibility with a board of the target",
    )
    parser.add_argument("--target", required=True)
    parser.add_argument(
        "model", type=Path, help="the model (.onnx), or a model compiled by the target's toolkit"
    )
    parser.add_argument(
        "--runtime-version",
        help="a compiled model: the version of the board's runtime (1.6.0), checked against "
        "the toolkit that built the model (default: unknown, reported as such)",
    )
    parser.add_argument("--first-layer", choices=("int8", "float16"), default=None)
    parser.add_argument("--output-precision", choices=("int8", "float16"), default="int8")
    parser.add_argument("--rule", choices=("A", "B"), default=None)
    parser.add_argument(
        "--input-type",
        help="the deployed input type as the target's vendor names it: a tensor type such as "
        "uint8 or float16 (default: what the vendor's compiler makes of the ONNX input), or an "
        "image type such as nv12",
    )
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(run=run_preflight)


def run_preflight(args: argparse.Namespace) -> int:
    report = preflight(
        args.model,
        args.target,
        first_layer=args.first_layer,
        output_precision=args.output_precision,
        rule=args.rule,
        input_type=args.input_type,
        board_versions=_runtime_versions(args.target, args.runtime_version),
    )
    if args.json:
        print_json(report.to_dict())
    else:
        print(report.summary())
    return 0 if report.ok else 1


def _runtime_versions(target: str, version: str | None) -> dict[str, str] | None:
    """``--runtime-version`` as the board versions the target's table reads its runtime from."""
    if version is None:
        return None
    from npu_hil.targets.compatibility import table_for
    from npu_hil.targets.registry import vendor_of

    table = table_for(vendor_of(target))
    if table is None or table.runtime is None:
        return {}
    return {table.runtime.keys[0]: version}
