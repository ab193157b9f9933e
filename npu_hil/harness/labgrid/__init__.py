"""Boards from a labgrid coordinator: places selected by name or tags, reserved through labgrid's
scheduler, acquired for the run, kept alive, and released however the run ends
(docs/farm/labgrid.md). Only :mod:`~npu_hil.harness.labgrid.coordinator` imports labgrid (an
optional extra); without it, it raises :class:`~npu_hil.harness.labgrid.errors.LabgridMissingError`.
"""
