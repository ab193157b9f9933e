"""The simulated NPU: every target of the harness, behaving as its vendor's runtime does (native
layouts, quantization, reported attributes, refusals), with faults to inject on purpose. The
host-side expectation of what a device must hold is in :mod:`npu_hil.harness.expect`.
"""

from __future__ import annotations

from npu_hil.harness.sim.faults import FAULT_NAMES, Fault, parse_faults
from npu_hil.harness.sim.options import SIM_TARGETS, vendor_of
from npu_hil.harness.sim.runtime import SimModel, SimNpu
from npu_hil.harness.simkit.errors import SimConfigError, SimRefusal
from npu_hil.harness.simkit.tensors import SimInput, SimRun, SimTensor

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
