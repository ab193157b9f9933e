"""The soak's faults, applied by the simulated runtime after each run
(:mod:`npu_hil.harness.sim.faults` checks their parameters).

- ``leak``: ``kib`` KiB kept per run in this module, so for as long as the agent process lives.
  The bytes are written (not a lazily mapped zero page), so they are resident: the agent's
  ``VmRSS`` grows by about ``kib`` per run, as with a runtime that never frees a buffer.
- ``flaky-errors``: run ``index`` fails with a DeviceError when a draw from ``seed`` and the
  index falls below ``rate``: on average a ``rate`` share of runs fail, reproducibly.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from npu_hil.harness.sim.faults import Fault
from npu_hil.harness.simkit.errors import SimRefusal

__all__ = ["apply_soak_faults", "leaked_bytes"]

_KEPT: list[bytes] = []
"""What ``leak`` has kept in this process: never released, on purpose."""


def leaked_bytes() -> int:
    return sum(len(b) for b in _KEPT)


def apply_soak_faults(faults: Iterable[Fault], index: int) -> None:
    """Keep memory for ``leak``; raise the refusal of a failing ``flaky-errors`` run."""
    for fault in faults:
        if fault.name == "leak":
            _KEPT.append(b"\x5a" * (int(fault.params.get("kib", 64)) * 1024))
        elif fault.name == "flaky-errors":
            rate = float(fault.params.get("rate", 0.2))
            seed = int(fault.params.get("seed", 0)) & 0xFFFFFFFF
            draw = float(np.random.default_rng([seed, index]).random())
            if draw < rate:
                raise SimRefusal(
                    "DeviceError",
                    "run",
                    f"flaky-errors: run {index} failed (simulated intermittent runtime error, "
                    f"rate {rate:g})",
                )
