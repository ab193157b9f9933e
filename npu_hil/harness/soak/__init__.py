"""Soak mode (docs/farm/health.md, "Soak"): models looped on boards with several contexts, the
memory sampled, the leak slope and the error rate held to bounds, a report with plots."""

from __future__ import annotations

from npu_hil.harness.soak.fit import Fit, theil_sen
from npu_hil.harness.soak.loop import BoardSoak, SoakError, SoakRun, soak
from npu_hil.harness.soak.report import write_soak_report
from npu_hil.harness.soak.samples import MemorySample, SoakPlan
from npu_hil.harness.soak.verdict import Bounds, Verdict, judge

__all__ = [
    "BoardSoak",
    "Bounds",
    "Fit",
    "MemorySample",
    "SoakError",
    "SoakPlan",
    "SoakRun",
    "Verdict",
    "judge",
    "soak",
    "theil_sen",
    "write_soak_report",
]
