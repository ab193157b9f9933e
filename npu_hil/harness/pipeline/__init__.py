"""The pipeline: run one model on one board and check every device buffer (pack → deploy → run →
fetch → expect → diff), the same from a script as under the pytest plugin; see
docs/reference/api/pipeline.md."""

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
