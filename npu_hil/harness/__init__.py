"""npu-hil: a hardware-in-the-loop test harness for NPU boards, shipped as a pytest plugin."""

from __future__ import annotations

__version__ = "0.1.0"
