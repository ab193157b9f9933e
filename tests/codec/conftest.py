"""What the codec's kernel tests share: running a test at each instruction-set level the CPU
has, or on the numpy fallback."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from npu_hil.harness.codec import fastcopy

ISA_LEVELS = ("base", "avx2", "avx512")


def at_level(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, kernels: tuple[str, ...]
) -> Iterator[str]:
    """For a fixture parametrized over :data:`ISA_LEVELS` and "numpy": the kernel held at that
    level (skipped where the CPU has none), or ``fastcopy``'s ``kernels`` entry points off."""
    if request.param == "numpy":
        for name in kernels:
            monkeypatch.setattr(fastcopy, name, None)
        yield "numpy"
        return
    module: ModuleType = pytest.importorskip("npu_hil.harness.codec._kernels")
    got = module.set_isa(request.param)
    try:
        if got != request.param:
            pytest.skip(f"this CPU runs no {request.param} kernels (best: {got})")
        yield request.param
    finally:
        module.set_isa(None)
