"""Which vendor's runtime each simulated target behaves like: the vendor units' registry."""

from __future__ import annotations

from npu_hil.harness.simkit.errors import SimConfigError
from npu_hil.targets.registry import all_targets, unit_for
from npu_hil.targets.unit import Vendor


def _simulated() -> tuple[str, ...]:
    return tuple(t for t in all_targets() if unit_for(t).simulator)


SIM_TARGETS = _simulated()
"""Every target a simulated board can be (the built-in ones; a unit registered later is
simulated too, see :func:`unit_of`)."""


def unit_of(target: str) -> Vendor:
    """The vendor unit of a target a simulated board can be."""
    if isinstance(target, str) and target in _simulated():
        return unit_for(target)
    raise SimConfigError(
        f"unknown target {target!r}; a simulated board can be: {', '.join(_simulated())}"
    )


def vendor_of(target: str) -> str:
    return unit_of(target).name
