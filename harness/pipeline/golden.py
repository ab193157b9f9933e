"""The golden job of a board's health check: the identity reference model on a tiny input,
through the real agent and :func:`~harness.pipeline.run.run_once` (deploy, run, fetch, every
buffer diffed), once, without retries.

A board that cannot run it is unhealthy: its infrastructure errors reach the farm's health
check as they are, a run whose buffers do not match is a :class:`GoldenJobError` with the
diff's summary. The board's ``--sim-fault`` faults are left out: they rig the tests' results on
purpose, and a health check that failed on them would turn every rigged failure into an
unhealthy board. A real board without a compiled identity model in its manifest cannot run the
job: that is said in the note and the check goes on without it.

    Farm(inventory, health_job=golden_job)   # what the pytest plugin passes
"""

from __future__ import annotations

import dataclasses

import numpy as np

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.farm.session import BoardSession
from npu_hil.harness.models import ManifestError
from npu_hil.harness.pipeline.run import run_once

__all__ = ["GOLDEN_MODEL", "GOLDEN_SHAPE", "GoldenJobError", "golden_inputs", "golden_job"]

GOLDEN_MODEL = "identity"
GOLDEN_SHAPE = (1, 3, 2, 2)


class GoldenJobError(NpuHilError):
    """The board ran the golden job and its buffers were wrong."""


def golden_inputs() -> dict[str, np.ndarray]:
    """A tiny float input, every element different (a stuck element shows); float, so every
    target's runtime takes it (quantized as the target's input is)."""
    size = int(np.prod(GOLDEN_SHAPE))
    return {"input": np.linspace(-1.0, 1.0, size, dtype=np.float32).reshape(GOLDEN_SHAPE)}


def golden_job(session: BoardSession) -> str:
    """Run the golden job on ``session``; a note on success, GoldenJobError on wrong buffers
    (an infrastructure error reaches the caller as it is)."""
    options = {k: v for k, v in session.adapter_options.items() if k != "faults"}
    # A breaker of its own: the check must not end the board's run of failures (the board's
    # breaker counts the tests' runs) nor count in it (a failed check speaks for itself).
    clean = dataclasses.replace(session, adapter_options=options, breaker=None)
    shape = "x".join(map(str, GOLDEN_SHAPE))
    try:
        run = run_once(clean, GOLDEN_MODEL, golden_inputs())
    except ManifestError as exc:
        return f"golden job not run: {exc.message}"
    if not run.ok:
        raise GoldenJobError(
            f"{session.name}: the golden job ({GOLDEN_MODEL} {shape}) came back wrong: "
            f"{run.summary()}"
        )
    # No timing in the note: two processes of one run checking one board say the same, and
    # the board's kept history holds it once.
    return f"golden job passed ({GOLDEN_MODEL} {shape})"
