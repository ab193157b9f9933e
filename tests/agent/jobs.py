"""What the agent and transport tests build again and again: the fake ``echo`` adapter's job, a
small job for the simulated NPU, and the Python 3.8 interpreter the board-side code is proven
on."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from npu_hil.harness import board
from npu_hil.harness.agent.protocol import InputSpec, JobSpec
from npu_hil.harness.models import build, save

FAKE_ADAPTERS = Path(__file__).parent / "fake_adapters" / "adapters"
# The board package, run as a folder (``python npu_hil/harness/board JOB_DIR``), as a board runs it.
BOARD_PACKAGE = Path(board.__file__).parent
X = np.arange(2 * 3 * 4 * 4, dtype=np.int8).reshape(2, 3, 4, 4)
PY38 = os.environ.get("NPU_HIL_PY38", "/root/.pyenv/versions/3.8.18/bin/python")


def echo_job(model: Path, job_id: str = "job", **overrides: Any) -> JobSpec:
    """A job for the fake ``echo`` adapter with one int8 input shaped like :data:`X`."""
    fields: dict[str, Any] = {
        "job_id": job_id,
        "adapter": "echo",
        "model": model,
        "inputs": (InputSpec("x", "NCHW", (2, 3, 4, 4), "int8"),),
        "load_timeout_s": 10.0,
        "run_timeout_s": 10.0,
    }
    fields.update(overrides)
    return JobSpec(**fields)


def sim_job(folder: Path, job_id: str, target: str) -> tuple[JobSpec, dict[str, np.ndarray]]:
    """A 1x1 convolution on the simulated NPU of ``target`` (its ONNX model saved in
    ``folder``) and its input."""
    model = save(build("conv1x1", (1, 3, 3, 5)), folder / "model.onnx")
    x = np.random.default_rng(1).integers(0, 256, (1, 3, 3, 5), dtype=np.uint8)
    spec = JobSpec(
        job_id=job_id,
        adapter="sim",
        model=model,
        inputs=(InputSpec("input", "NCHW", (1, 3, 3, 5), "uint8"),),
        adapter_options={"target": target},
        load_timeout_s=30,
        run_timeout_s=30,
    )
    return spec, {"input": x}


@functools.cache
def py38_problem() -> str | None:
    """Why :data:`PY38` cannot prove the board-side code, or None when it can (asked once)."""
    if not os.access(PY38, os.X_OK):
        return f"Python 3.8 interpreter not found at {PY38} (set NPU_HIL_PY38 to another one)"
    probe = subprocess.run(
        [PY38, "-c", "import sys, numpy; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    if probe.returncode != 0:
        return f"{PY38} cannot import numpy: {probe.stderr.decode().strip()[-200:]}"
    if probe.stdout.decode().strip() != "3.8":
        return f"{PY38} is Python {probe.stdout.decode().strip()}, not 3.8"
    return None
