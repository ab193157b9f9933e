"""Where the agent finds its runtime adapters, and how it imports them: every folder on the
``__path__`` of one hand-built ``adapters`` package, searched in the order ``docs/runtime/agent.md``
(The command line) gives.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

ADAPTERS_ENV = "NPU_HIL_AGENT_ADAPTERS"
ADAPTER_NAME_RE = re.compile(r"[a-z0-9_]+\Z")
# Modules of an adapter folder that are no adapter: the base classes and a package's marker.
NOT_ADAPTERS = ("base", "__init__")


def is_adapter_name(name: object) -> bool:
    """Whether ``name`` can name an adapter module: ``[a-z0-9_]+`` and not one of NOT_ADAPTERS."""
    return isinstance(name, str) and bool(ADAPTER_NAME_RE.match(name)) and name not in NOT_ADAPTERS


# The package's own folder, and the bundle's folder of extra adapters beside it.
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
EXTRA_ADAPTERS = "adapters"


def adapter_dirs_from(cli_dirs: list[str]) -> list[str]:
    """The adapter folders in search order (see the module docstring)."""
    env = [d for d in os.environ.get(ADAPTERS_ENV, "").split(os.pathsep) if d]
    extra = os.path.join(os.path.dirname(PACKAGE_DIR), EXTRA_ADAPTERS)
    given = [os.path.realpath(d) for d in [*cli_dirs, *env]]
    return [*given, extra, os.path.join(PACKAGE_DIR, "adapters")]


def load_adapter_base(adapter_dirs: list[str]) -> ModuleType:
    """``adapters.base``, the contract every adapter module subclasses, once the ``adapters``
    package is registered with every search folder on its ``__path__``: by hand, so that a folder
    holding only ``echo.py`` still sees the board package's ``adapters.base``, whether or not
    either folder has an ``__init__.py``."""
    package = sys.modules.get("adapters")
    if package is None:
        spec = importlib.machinery.ModuleSpec("adapters", None, is_package=True)
        spec.submodule_search_locations = list(adapter_dirs)
        package = importlib.util.module_from_spec(spec)
        sys.modules["adapters"] = package
    search = package.__spec__.submodule_search_locations if package.__spec__ else None
    if search is not None:
        for folder in reversed(adapter_dirs):
            if folder not in search:
                search.insert(0, folder)
    return importlib.import_module("adapters.base")


def available_adapters(adapter_dirs: list[str]) -> list[str]:
    names = set()
    for folder in adapter_dirs:
        if os.path.isdir(folder):
            for entry in os.listdir(folder):
                stem, ext = os.path.splitext(entry)
                if ext == ".py" and is_adapter_name(stem):
                    names.add(stem)
    return sorted(names)
