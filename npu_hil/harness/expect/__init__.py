"""The oracle: what a device must hold, computed on the host from the runtime's report alone.

Fed by the vendor units' quantization models (``npu_hil/targets/<vendor>/quant.py``) and the
reference model (onnxruntime), used alike by the simulator's tests and the real-board runner:
nothing here imports the simulator. Entry point: :func:`expect_run`.
"""

from __future__ import annotations

from npu_hil.harness.expect.oracle import Expected, expect_run, npu_outputs, semantics

__all__ = ["Expected", "expect_run", "npu_outputs", "semantics"]
