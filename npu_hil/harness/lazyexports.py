"""A package's names imported on first use (PEP 562), for packages that every pytest run touches
(the plugin reads a light module of them) but whose heavy modules only a board test needs."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps each name to the module of the
    package that defines it; the name is imported on first use and kept in the package."""

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(importlib.import_module(package), name, value)  # once: later reads skip this
        return value

    return __getattr__
