"""``npu-hil``: one entry point, one subcommand module per area.

Bad input exits 2 with a single line on stderr and no traceback; every listing takes ``--json``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from npu_hil.harness.cli import (
    codec_cmd,
    diff_cmd,
    health_cmd,
    history_cmd,
    inventory_cmd,
    models_cmd,
    nightly_cmd,
    preflight_cmd,
    simfarm_cmd,
    soak_cmd,
    targets_cmd,
)
from npu_hil.harness.errors import NpuHilError

EXIT_BAD_INPUT = 2
COMMANDS = (
    codec_cmd,
    diff_cmd,
    health_cmd,
    history_cmd,
    inventory_cmd,
    models_cmd,
    nightly_cmd,
    preflight_cmd,
    simfarm_cmd,
    soak_cmd,
    targets_cmd,
)


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors already; keep its message to one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="npu-hil", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


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
