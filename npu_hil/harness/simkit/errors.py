"""What a simulated board raises: the runtime's refusals, and mistakes in the sim's own options."""

from __future__ import annotations

from npu_hil.harness.errors import NpuHilError

KINDS = ("DeviceError", "LayoutError", "UnsupportedError", "TimeoutError")
STAGES = ("init", "load", "run", "fetch", "release")


class SimRefusal(NpuHilError):
    """The simulated runtime refused, as the real one would.

    ``kind`` and ``stage`` follow the agent's adapter contract (``adapters/base.py``):
    ``DeviceError`` — the runtime refused the model or the call (a convolution too wide, an
    unaligned buffer, CPU pre-processing the SoC does not have); ``LayoutError`` — a tensor
    combination the vendor tables do not list; ``UnsupportedError`` — the sim cannot do this
    (a compiled artifact instead of ONNX, a graph the numpy path cannot run).
    """

    def __init__(self, kind: str, stage: str, message: str) -> None:
        if kind not in KINDS or stage not in STAGES:
            raise ValueError(f"SimRefusal: kind {kind!r} / stage {stage!r} unknown")
        super().__init__(message)
        self.kind = kind
        self.stage = stage


class SimConfigError(NpuHilError, ValueError):
    """The sim's options or fault list are wrong (unknown target, fault or parameter, a fault
    that applies to no tensor of the run)."""
