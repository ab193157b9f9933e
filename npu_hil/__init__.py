"""npu-hil's import name.

It holds the design's two code folders, ``npu_hil/harness/`` (the library, the pytest plugin, the
CLI and the board agent) and ``npu_hil/targets/`` (the vendors' tables and layouts), so an
installed npu-hil claims one top-level name and leaves a user project's own ``harness``,
``targets`` or ``tests`` modules alone.
"""
