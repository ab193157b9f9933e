"""The simulated NPU: every target of the harness, behaving as its vendor's runtime does as far as
the seeds and spec notes tell (native layouts, quantization, reported attributes, refusals), with
faults to inject on purpose.

Entry points: :class:`SimNpu` (load, run), :class:`SimInput`, :class:`Fault`; the host-side
expectation of what a device must hold is in :mod:`harness.sim.expect`.
"""

from __future__ import annotations

from harness.sim.errors import SimConfigError, SimRefusal
from harness.sim.faults import FAULT_NAMES, Fault, parse_faults
from harness.sim.runtime import SimModel, SimNpu
from harness.sim.targets import SIM_TARGETS, vendor_of
from harness.sim.tensors import SimInput, SimRun, SimTensor

__all__ = [
    "FAULT_NAMES",
    "SIM_TARGETS",
    "Fault",
    "SimConfigError",
    "SimInput",
    "SimModel",
    "SimNpu",
    "SimRefusal",
    "SimRun",
    "SimTensor",
    "parse_faults",
    "vendor_of",
]
