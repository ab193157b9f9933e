"""What a vendor unit writes its simulated runtime with: the tensors as a device holds them, the
graph as a runtime reads it, the refusals, the options, and :class:`VendorSim`, the base of every
vendor's simulated runtime. Below both the vendor units (``npu_hil/targets/``) and the simulator
(``npu_hil.harness.sim``), which drives the runtime a unit offers; it imports neither.
"""

from __future__ import annotations

from npu_hil.harness.simkit.base import HeldInput, VendorSim, dense_strides, static_shape
from npu_hil.harness.simkit.errors import SimConfigError, SimRefusal
from npu_hil.harness.simkit.graph import GraphInfo, TensorInfo
from npu_hil.harness.simkit.options import RuntimeOptions
from npu_hil.harness.simkit.tensors import InputLike, SimInput, SimRun, SimTensor

__all__ = [
    "GraphInfo",
    "HeldInput",
    "InputLike",
    "RuntimeOptions",
    "SimConfigError",
    "SimInput",
    "SimRefusal",
    "SimRun",
    "SimTensor",
    "TensorInfo",
    "VendorSim",
    "dense_strides",
    "static_shape",
]
