"""Preflight: check an ONNX model against a target's tables before anything is deployed
(:func:`preflight`; the checks themselves are the vendor units')."""

from __future__ import annotations

from npu_hil.harness.errors import PreflightError
from npu_hil.harness.preflight.check import preflight

__all__ = ["PreflightError", "preflight"]
