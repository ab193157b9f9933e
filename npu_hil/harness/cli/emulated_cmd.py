"""``npu-hil simfarm arm64-root build|path|status``: the emulated aarch64 boards' root
(docs/farm/emulated.md). ``build`` exits 0 or 2; ``path`` and ``status`` exit 1 when the root for
the current recipe is not built (or, for ``status``, a tool is missing)."""

from __future__ import annotations

import argparse
from typing import Any

from npu_hil.harness.cli.common import print_json
from npu_hil_testkit.emulated import DEFAULT_RECIPE, build_root, cache_dir, find_root, missing_tools
from npu_hil_testkit.emulated.root import BUILD_TIMEOUT


def add_actions(actions: Any) -> None:
    """Add ``arm64-root`` to ``npu-hil simfarm``'s actions."""
    root = actions.add_parser(
        "arm64-root",
        help="the emulated aarch64 boards' root filesystem (Debian arm64 under qemu-user)",
        description="Build, locate or describe the arm64 Debian root the emulated boards run "
        f"(cached under {cache_dir()}/roots, one folder per recipe).",
    )
    verbs = root.add_subparsers(dest="verb", required=True, parser_class=type(root))
    build = verbs.add_parser(
        "build", help="build the root, or reuse the one built from this recipe"
    )
    build.add_argument("--force", action="store_true", help="rebuild even when one is cached")
    build.add_argument(
        "--timeout", type=float, default=BUILD_TIMEOUT, help="seconds the build may take"
    )
    build.add_argument("--json", action="store_true")
    build.set_defaults(run=run_build)
    path = verbs.add_parser("path", help="print the root's folder (its launcher is launch-python)")
    path.set_defaults(run=run_path)
    status = verbs.add_parser("status", help="whether the root for the current recipe is built")
    status.add_argument("--json", action="store_true")
    status.set_defaults(run=run_status)


def run_build(args: argparse.Namespace) -> int:
    root = build_root(force=args.force, timeout=args.timeout)
    if args.json:
        print_json(root.to_dict())
    else:
        print(f"arm64 root: {root.root} (Python {root.python_version}, numpy {root.numpy_version})")
        print(f"python: {root.launcher}")
        print(f"built in {root.seconds:.1f} s")
    return 0


def run_path(args: argparse.Namespace) -> int:
    root = find_root()
    if root is None:
        print(f"not built (recipe {DEFAULT_RECIPE.key()}): npu-hil simfarm arm64-root build")
        return 1
    print(root.dir)
    return 0


def run_status(args: argparse.Namespace) -> int:
    root = find_root()
    missing = missing_tools(build=root is None)
    report = {
        "key": DEFAULT_RECIPE.key(),
        "built": root is not None,
        "missing": missing,
        **(root.to_dict() if root is not None else {}),
    }
    if args.json:
        print_json(report)
    elif root is None:
        print(f"recipe {DEFAULT_RECIPE.key()}: not built")
    else:
        print(f"recipe {DEFAULT_RECIPE.key()}: built in {root.seconds:.1f} s, {root.root}")
        print(
            f"  Python {root.python_version}, numpy {root.numpy_version}; python: {root.launcher}"
        )
    if not args.json:  # the JSON report lists them already: its stdout is one document
        for tool in missing:
            print(f"  missing: {tool}")
    return 0 if root is not None and not missing else 1
