"""Soak mode: the chosen models looped on the chosen boards with several contexts at once, the
agents' memory and the board's CMA / DMA-buffer pools sampled, the leak slope and the error rate
held to bounds, and a report with plots.

    from npu_hil.harness.soak import Bounds, SoakPlan, judge, soak, write_soak_report
"""

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
