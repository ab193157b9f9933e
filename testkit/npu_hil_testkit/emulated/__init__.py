"""Emulated boards: a Debian root for the board's CPU, its Python run by qemu-user.

An emulated board runs the board side as a board would: the real interpreter for the board's CPU
(Debian's aarch64 ``python3`` and ``numpy``) and the vendor's real Python layer (e.g.
rknn-toolkit-lite2's aarch64 wheel). It is not the vendor's runtime library nor the NPU: those
are the project's fakes, cross-compiled for the board's CPU.

:mod:`~npu_hil_testkit.emulated.recipe` says what a root is made of,
:mod:`~npu_hil_testkit.emulated.root` builds and caches it and writes its ``python``,
:mod:`~npu_hil_testkit.emulated.board` makes a board of it.
"""

from __future__ import annotations

from npu_hil_testkit.emulated.board import EmulatedBoard, make_board
from npu_hil_testkit.emulated.recipe import DEFAULT_RECIPE, RootRecipe
from npu_hil_testkit.emulated.root import (
    EmulatedRoot,
    EmulationError,
    MissingEmulatorError,
    build_root,
    cache_dir,
    find_root,
    missing_tools,
)

__all__ = [
    "DEFAULT_RECIPE",
    "EmulatedBoard",
    "EmulatedRoot",
    "EmulationError",
    "MissingEmulatorError",
    "RootRecipe",
    "build_root",
    "cache_dir",
    "find_root",
    "make_board",
    "missing_tools",
]
