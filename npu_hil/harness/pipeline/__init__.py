"""The pipeline: run one model on one board and check every device buffer.

    pack → deploy → run → fetch → expect → diff

:func:`run_model` takes a :class:`~npu_hil.harness.farm.BoardSession` (the farm decides how the
board is reached) and returns a :class:`ModelRun`: every input and output buffer diffed byte for
byte against what the host says the device must hold, computed from what the device *reported*,
never from a simulator's internals, so the same code checks a simulated board and a real one. It
works the same from a script as under the pytest plugin (whose ``run_model`` fixture calls it).
"""

from __future__ import annotations

from npu_hil.harness.models.preprocessing import Preprocessing, PreprocessingError
from npu_hil.harness.pipeline.result import ModelRun, TensorRun
from npu_hil.harness.pipeline.run import RunOptions, run_model, run_once

__all__ = [
    "ModelRun",
    "Preprocessing",
    "PreprocessingError",
    "RunOptions",
    "TensorRun",
    "run_model",
    "run_once",
]
