"""The registry of vendor units (``unit_for("rk3588")``, ``vendor_of("rdk-x5")``, ``units()``):
the first lookup loads every :class:`~npu_hil.targets.unit.Vendor` named in the ``npu_hil.vendors``
entry-point group (docs/design/index.md, "Adding a vendor"); :func:`register` makes a unit known
for a while (a test) and registers its layouts and report reader with the codec."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points

from npu_hil.harness.codec import registry as codec_registry
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.unit import Vendor

__all__ = [
    "BUILT_IN",
    "ENTRY_POINT_GROUP",
    "HW_ADAPTERS",
    "VENDOR_OF",
    "VendorPluginError",
    "all_targets",
    "load_vendors",
    "pass_through_adapters",
    "register",
    "unit_for",
    "unit_named",
    "units",
    "unregister",
    "vendor_of",
]

ENTRY_POINT_GROUP = "npu_hil.vendors"
BUILT_IN = ("rockchip", "horizon", "kneron")
"""npu-hil's own vendors, in the order every listing of targets follows; other vendors come
after them, by entry-point name."""

_UNITS: dict[str, Vendor] = {}
_BY_TARGET: dict[str, Vendor] = {}
_LOADED: list[bool] = []


class VendorPluginError(LayoutError):
    """An entry point of the ``npu_hil.vendors`` group that does not give a vendor unit."""


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


def _order(point: EntryPoint) -> tuple[int, str]:
    return (BUILT_IN.index(point.name) if point.name in BUILT_IN else len(BUILT_IN), point.name)


def _unit_of(point: EntryPoint) -> Vendor:
    where = f"vendor plug-in {point.name!r} ({point.value}"
    where += f", from {point.dist.name} {point.dist.version})" if point.dist else ")"
    try:
        unit = point.load()
    except Exception as exc:
        raise VendorPluginError(f"{where}: cannot be loaded: {type(exc).__name__}: {exc}") from exc
    if not isinstance(unit, Vendor):
        raise VendorPluginError(f"{where}: expected a Vendor unit, got {type(unit).__name__}")
    return unit


def load_vendors() -> None:
    """Register every vendor of the ``npu_hil.vendors`` entry-point group, once."""
    if _LOADED:
        return
    _LOADED.append(True)  # before loading: a unit may look itself up while it loads
    try:
        points = sorted(entry_points(group=ENTRY_POINT_GROUP), key=_order)
        if not points:
            raise VendorPluginError(
                f"no vendor in the {ENTRY_POINT_GROUP!r} entry-point group: npu-hil is not "
                "installed (pip install npu-hil, or pip install -e . in a checkout)"
            )
        for point in points:
            if point.name not in _UNITS:
                register(_unit_of(point))
    except BaseException:
        _LOADED.clear()
        raise


def units() -> tuple[Vendor, ...]:
    load_vendors()
    return tuple(_UNITS.values())


def all_targets() -> tuple[str, ...]:
    """Every target of every registered vendor."""
    load_vendors()
    return tuple(_BY_TARGET)


def unit_for(target: str) -> Vendor:
    """The vendor unit serving ``target``; an unknown target is a LayoutError naming the known."""
    load_vendors()
    try:
        return _BY_TARGET[target]
    except (KeyError, TypeError):
        raise LayoutError(
            f"unknown target {target!r}; known targets: {', '.join(_BY_TARGET)}"
        ) from None


def unit_named(name: str) -> Vendor:
    load_vendors()
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


class _Live(Mapping[str, str]):
    """A mapping read from the registry on every use (a vendor registered later shows)."""

    def __init__(self, read: Callable[[], dict[str, str]]) -> None:
        self._read = read

    def __getitem__(self, key: str) -> str:
        return self._read()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


VENDOR_OF: Mapping[str, str] = _Live(lambda: {t: u.name for u in units() for t in u.targets})
"""Target → vendor name."""
HW_ADAPTERS: Mapping[str, str] = _Live(
    lambda: {u.name: u.hardware_adapter for u in units() if u.hardware_adapter}
)
"""Vendor name → the board adapter its real boards run by default."""
