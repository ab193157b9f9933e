"""The registry of vendor units: every stage of the harness finds a target's vendor here.

    unit = unit_for("rk3588")         # the Vendor serving a target
    vendor_of("rdk-x5")               # "horizon"
    units()                           # every registered Vendor, in registration order

The built-in units register when ``npu_hil.targets`` is imported (the lookups below import it);
a new vendor calls :func:`register` with its :class:`~npu_hil.targets.unit.Vendor`, which also
registers its layouts and report reader with the codec.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from npu_hil.harness.codec import registry as codec_registry
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.unit import Vendor

__all__ = [
    "HW_ADAPTERS",
    "VENDOR_OF",
    "all_targets",
    "pass_through_adapters",
    "register",
    "unit_for",
    "unit_named",
    "units",
    "unregister",
    "vendor_of",
]

_UNITS: dict[str, Vendor] = {}
_BY_TARGET: dict[str, Vendor] = {}


def register(unit: Vendor) -> Vendor:
    """Make ``unit`` known to every stage (its targets must not belong to another vendor)."""
    taken = sorted(t for t in unit.targets if _BY_TARGET.get(t, unit).name != unit.name)
    if taken:
        raise LayoutError(f"vendor {unit.name!r}: targets {', '.join(taken)} belong to another")
    if not unit.targets:
        raise LayoutError(f"vendor {unit.name!r}: a vendor serves at least one target")
    _UNITS[unit.name] = unit
    for target in unit.targets:
        _BY_TARGET[target] = unit
    codec_registry.register(unit.targets, unit.build_layout, unit.layout_names, unit.report)
    return unit


def unregister(name: str) -> None:
    """Forget the vendor ``name`` (a vendor registered for a while, by a test)."""
    unit = _UNITS.pop(name, None)
    if unit is None:
        return
    for target in unit.targets:
        _BY_TARGET.pop(target, None)
    codec_registry.unregister(unit.targets)


def _loaded() -> None:
    importlib.import_module(codec_registry.UNITS_PACKAGE)


def units() -> tuple[Vendor, ...]:
    _loaded()
    return tuple(_UNITS.values())


def all_targets() -> tuple[str, ...]:
    """Every target of every registered vendor."""
    _loaded()
    return tuple(_BY_TARGET)


def unit_for(target: str) -> Vendor:
    """The vendor unit serving ``target``; an unknown target is a LayoutError naming the known."""
    _loaded()
    try:
        return _BY_TARGET[target]
    except (KeyError, TypeError):
        raise LayoutError(
            f"unknown target {target!r}; known targets: {', '.join(_BY_TARGET)}"
        ) from None


def unit_named(name: str) -> Vendor:
    _loaded()
    try:
        return _UNITS[name]
    except (KeyError, TypeError):
        raise LayoutError(f"unknown vendor {name!r}; vendors: {', '.join(_UNITS)}") from None


def vendor_of(target: str) -> str:
    """The name of the vendor serving ``target``."""
    return unit_for(target).name


def pass_through_adapters() -> frozenset[str]:
    """The board adapters that take pre-laid-out native input bytes, of every vendor."""
    return frozenset(a for unit in units() for a in unit.pass_through_adapters)


class _VendorOf(Mapping[str, str]):
    """Target → vendor name, live over the registry (a vendor registered later shows)."""

    def __getitem__(self, target: str) -> str:
        _loaded()
        return _BY_TARGET[target].name

    def __iter__(self) -> Iterator[str]:
        return iter(all_targets())

    def __len__(self) -> int:
        return len(all_targets())


class _HardwareAdapters(Mapping[str, str]):
    """Vendor name → the board adapter its real boards run by default, live over the registry."""

    def __getitem__(self, vendor: str) -> str:
        adapter = unit_named(vendor).hardware_adapter if vendor in _names() else None
        if adapter is None:
            raise KeyError(vendor)
        return adapter

    def __iter__(self) -> Iterator[str]:
        return iter(u.name for u in units() if u.hardware_adapter)

    def __len__(self) -> int:
        return sum(1 for u in units() if u.hardware_adapter)


def _names() -> tuple[str, ...]:
    return tuple(u.name for u in units())


VENDOR_OF: Mapping[str, str] = _VendorOf()
HW_ADAPTERS: Mapping[str, str] = _HardwareAdapters()
