"""The golden job of a board's health check (docs/farm/health.md): the identity model on a tiny
input through the real agent, once, without retries. The board's ``--sim-fault`` faults are left
out: they rig the tests' results on purpose and would make every rigged board unhealthy."""

from __future__ import annotations

import dataclasses

import numpy as np

from npu_hil.harness.errors import DeviceError, LayoutError, NpuHilError, TransportError
from npu_hil.harness.farm.session import BoardSession
from npu_hil.harness.models import ManifestError
from npu_hil.harness.pipeline.run import run_once

__all__ = ["GoldenJobError", "golden_job"]

GOLDEN_MODEL = "identity"
GOLDEN_SHAPE = (1, 3, 2, 2)


class GoldenJobError(NpuHilError):
    """The board ran the golden job and its buffers were wrong."""


INPUT_DTYPES = ("float32", "uint8", "float16")
"""The golden input's element types, tried in order: a target's runtime takes float (quantizing
it as its first layer says), or only 8-bit data (runtimes that do not quantize on the CPU), or
only float16 (a float16 first layer); the first one the board takes is the check."""


def golden_inputs(dtype: str = "float32") -> dict[str, np.ndarray]:
    """A tiny input, every element different (a stuck element shows)."""
    size = int(np.prod(GOLDEN_SHAPE))
    if np.dtype(dtype).kind == "f":
        values = np.linspace(-1.0, 1.0, size).astype(dtype)
    else:
        values = (np.arange(size) * 7 + 3).astype(dtype)
    return {"input": values.reshape(GOLDEN_SHAPE)}


def golden_job(session: BoardSession) -> str:
    """Run the golden job on ``session``; a note on success, GoldenJobError on wrong buffers
    (an infrastructure error reaches the caller as it is)."""
    options = {k: v for k, v in session.adapter_options.items() if k != "faults"}
    # A breaker of its own: the check must not end the board's run of failures (the board's
    # breaker counts the tests' runs) nor count in it (a failed check speaks for itself).
    clean = dataclasses.replace(session, adapter_options=options, breaker=None)
    shape = "x".join(map(str, GOLDEN_SHAPE))
    for n, dtype in enumerate(INPUT_DTYPES):
        try:
            run = run_once(clean, GOLDEN_MODEL, golden_inputs(dtype))
        except ManifestError as exc:
            return f"golden job not run: {exc.message}"
        except (LayoutError, DeviceError) as exc:
            # The runtime refused the input's element type before running (not a device fault,
            # nor infrastructure): it takes another, so try the next.
            refused = not isinstance(exc, TransportError) and "input 'input'" in exc.message
            if refused and n + 1 < len(INPUT_DTYPES):
                continue
            raise
        if not run.ok:
            raise GoldenJobError(
                f"{session.name}: the golden job ({GOLDEN_MODEL} {shape} {dtype}) came back "
                f"wrong: {run.summary()}"
            )
        # No timing in the note: two processes of one run checking one board say the same,
        # and the board's kept history holds it once.
        return f"golden job passed ({GOLDEN_MODEL} {shape} {dtype})"
    raise AssertionError("unreachable: the last element type re-raises")  # pragma: no cover
