"""Argument parsing shared by the subcommands: tensor description flags and ``--param k=v``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_hil.harness.codec import BlockedLayout, get_layout
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.registry import units

if TYPE_CHECKING:
    from npu_hil.harness.farm.inventory import Inventory

DEFAULT_INVENTORY = Path("inventory.yaml")


def parse_shape(text: str) -> tuple[int, ...]:
    parts = text.replace("x", ",").split(",")
    try:
        if text.strip() and not all(p.strip() for p in parts):
            raise ValueError("an empty dimension")
        dims = tuple(int(v) for v in parts if v.strip())
    except ValueError as exc:
        raise LayoutError(f"--shape: expected integers like 1,32,4,5, got {text!r}") from exc
    if not dims:
        raise LayoutError("--shape: expected at least one dimension")
    return dims


def parse_params(items: list[str] | None) -> dict[str, Any]:
    """``k=v`` pairs; ``v`` is JSON where it parses (numbers, lists), else a plain string."""
    params: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise LayoutError(f"--param: expected key=value, got {item!r}")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


def add_layout_args(parser: argparse.ArgumentParser, *, tensor: bool = True) -> None:
    examples = ", ".join(unit.targets[0] for unit in units())
    parser.add_argument("--target", required=True, help=f"e.g. {examples}")
    parser.add_argument("--layout", required=True, help="e.g. 1W16C8B, NC1HWC2, strided")
    parser.add_argument("--role", choices=("input", "output"), default="output")
    parser.add_argument(
        "--param",
        action="append",
        metavar="K=V",
        help="layout parameter or device-reported attribute (repeatable)",
    )
    if tensor:
        parser.add_argument("--shape", required=True, type=str, help="logical shape, e.g. 1,32,4,5")
        parser.add_argument("--dtype", required=True, help="e.g. int8, uint8, int16, float16")


def add_board_args(
    parser: argparse.ArgumentParser, *, targets: bool = True, sim_fault: str = ""
) -> None:
    """``--inventory``, ``--target`` and ``--board`` as the commands that reach boards take them;
    ``--sim-fault`` when ``sim_fault`` says what a fault goes into."""
    parser.add_argument(
        "--inventory",
        type=Path,
        help="the board inventory (default: inventory.yaml here, else the built-in simulated farm)",
    )
    if targets:
        parser.add_argument(
            "--target", action="append", default=[], metavar="SOC", help="only these targets"
        )
    parser.add_argument(
        "--board", action="append", default=[], metavar="NAME", help="only these boards"
    )
    if sim_fault:
        parser.add_argument(
            "--sim-fault",
            action="append",
            default=[],
            metavar="BOARD=FAULT[:key=value,...]",
            help=f"inject a fault into {sim_fault}",
        )


def layout_from_args(args: argparse.Namespace, shape: tuple[int, ...], dtype: str) -> BlockedLayout:
    return get_layout(
        args.target, args.layout, shape, dtype, role=args.role, **parse_params(args.param)
    )


def count_up_to(most: int) -> Callable[[str], int]:
    """An argparse type: an integer from 1 to ``most``, written in plain digits."""

    def parse(text: str) -> int:
        value = int(text) if text.isascii() and text.isdigit() and len(text) < 10 else 0
        if not 1 <= value <= most:
            raise argparse.ArgumentTypeError(f"expected an integer from 1 to {most}, got {text!r}")
        return value

    return parse


def number_from_zero(most: float, expected: str) -> Callable[[str], float]:
    """An argparse type: a number from 0 to ``most`` (never nan); ``expected`` says which."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0 <= value <= most:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=False, default=str))


def load_cli_inventory(path: Path | None) -> Inventory:
    """``--inventory``, else ``inventory.yaml`` here, else the built-in simulated farm (a
    labgrid section's places are not asked for)."""
    from npu_hil.harness.farm.inventory import load_inventory
    from npu_hil.harness.farm.starter import builtin_inventory

    if path is None and DEFAULT_INVENTORY.is_file():
        path = DEFAULT_INVENTORY
    return builtin_inventory() if path is None else load_inventory(path)
