"""npu-hil's import name.

The repository keeps the design's top-level folders ``npu_hil/harness/`` (the library, the pytest
plugin, the CLI and the board agent) and ``npu_hil/targets/`` (the vendors' tables and layouts);
this package holds them as ``npu_hil.harness`` and ``npu_hil.targets`` (symbolic links in a
checkout, copies in a wheel), so an installed npu-hil claims one top-level name and leaves a user
project's own ``harness``, ``targets`` or ``tests`` modules alone.
"""
