"""The agent's one entry: ``python3 <bundle>/npu_hil_board ...`` on a board (the package folder as
deployed), ``python -m npu_hil.harness.board ...`` where the harness is installed (:mod:`main`)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable


def _entry() -> Callable[[], int]:
    if __package__:
        from .main import main

        return main
    # Run as a folder: Python put the folder itself first on sys.path, where the package's
    # modules would stand in for top-level ones. Load it instead as the package it is, by path,
    # under the folder's name (``npu_hil_board`` in a bundle: never ``npu_hil``, so an agent
    # started where the harness is installed, a simulated board, runs the bundle it was sent).
    here = os.path.dirname(os.path.abspath(__file__))
    name = os.path.basename(here)
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(here, "__init__.py"), submodule_search_locations=[here]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    entry: Callable[[], int] = importlib.import_module(name + ".main").main
    return entry


if __name__ == "__main__":
    sys.exit(_entry()())
