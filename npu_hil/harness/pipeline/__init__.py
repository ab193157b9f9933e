"""The pipeline: run one model on one board and check every device buffer (pack → deploy → run →
fetch → expect → diff), the same from a script as under the pytest plugin; see
docs/reference/api/pipeline.md."""

from __future__ import annotations

from npu_hil.harness.models.preprocessing import Preprocessing, PreprocessingError
from npu_hil.harness.pipeline.result import ModelRun
from npu_hil.harness.pipeline.run import run_model

__all__ = ["ModelRun", "Preprocessing", "PreprocessingError", "run_model"]
