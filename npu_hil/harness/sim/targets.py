"""Which vendor's runtime each simulated target behaves like: the vendor units' registry."""

from __future__ import annotations

from collections.abc import Mapping

from npu_hil.harness.simkit.errors import SimConfigError
from npu_hil.targets.registry import VENDOR_OF as _VENDOR_OF
from npu_hil.targets.registry import all_targets, unit_for
from npu_hil.targets.unit import Vendor

VENDOR_OF: Mapping[str, str] = _VENDOR_OF
"""Target → vendor name, over every registered vendor unit."""

SIM_TARGETS: tuple[str, ...] = tuple(t for t in all_targets() if unit_for(t).simulator)
"""Every target a simulated board can be (the built-in ones; a unit registered later is
simulated too, see :func:`unit_of`)."""


def _simulated() -> tuple[str, ...]:
    return tuple(t for t in all_targets() if unit_for(t).simulator)


def unit_of(target: str) -> Vendor:
    """The vendor unit of a target a simulated board can be."""
    if isinstance(target, str) and target in _simulated():
        return unit_for(target)
    raise SimConfigError(
        f"unknown target {target!r}; a simulated board can be: {', '.join(_simulated())}"
    )


def vendor_of(target: str) -> str:
    return unit_of(target).name
