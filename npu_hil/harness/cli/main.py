"""``npu-hil``: one entry point, one subcommand module per area.

Bad input exits 2 with a single line on stderr and no traceback; every listing takes ``--json``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from npu_hil.harness.cli import (
    codec_cmd,
    diff_cmd,
    health_cmd,
    history_cmd,
    inventory_cmd,
    models_cmd,
    nightly_cmd,
    preflight_cmd,
    soak_cmd,
    targets_cmd,
)
from npu_hil.harness.errors import MissingTestSupportError, NpuHilError, has_test_support

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors already; keep its message to one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="npu-hil", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in ADD_COMMANDS:
        add(sub)
    return parser


def _add_simfarm(sub: Any) -> None:
    """``npu-hil simfarm``, whose farm is the test support's (npu-hil-testkit): without it the
    command is still listed and says how to install it."""
    if not has_test_support():
        parser = sub.add_parser("simfarm", help="simulated boards (needs npu-hil-testkit)")
        parser.add_argument("words", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        parser.set_defaults(run=_needs_test_support)
        return
    from npu_hil.harness.cli import simfarm_cmd

    simfarm_cmd.add_parser(sub)


def _needs_test_support(args: argparse.Namespace) -> int:
    raise MissingTestSupportError("npu-hil simfarm")


ADD_COMMANDS: tuple[Callable[[Any], None], ...] = (
    codec_cmd.add_parser,
    diff_cmd.add_parser,
    health_cmd.add_parser,
    history_cmd.add_parser,
    inventory_cmd.add_parser,
    models_cmd.add_parser,
    nightly_cmd.add_parser,
    preflight_cmd.add_parser,
    _add_simfarm,
    soak_cmd.add_parser,
    targets_cmd.add_parser,
)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (NpuHilError, OSError, ValueError) as exc:
        message = exc.message if isinstance(exc, NpuHilError) else str(exc)
        print(f"npu-hil: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
