"""The ``sim`` runtime adapter: a simulated NPU behind the agent's adapter contract.

It imports the harness (:mod:`npu_hil.harness.sim`), so it is no part of the board package: it
reaches the agent as an extra adapter, as a test's fake does, and runs only where npu-hil is
installed. Its options: :mod:`npu_hil.harness.sim.options`."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional

from npu_hil.harness.errors import LayoutError
from npu_hil.harness.models.reference import ModelInputError
from npu_hil.harness.sim import SimConfigError, SimModel, SimNpu, SimRefusal, SimTensor
from npu_hil.harness.sim.faults import SIM_LOG_LEVEL_ENV

if TYPE_CHECKING:
    from npu_hil.harness.board.adapters import base
else:
    # The agent's own contract, the module its checks use: it loads this file as adapters.sim,
    # beside the board package's adapters.base (npu_hil.harness.board.loader), as it loads a
    # vendor's.
    import adapters.base as base


@contextmanager
def _typed_errors(stage: str) -> Iterator[None]:
    """Every refusal of the simulated runtime as the agent's typed AdapterError."""
    try:
        yield
    except SimRefusal as exc:
        raise base.AdapterError(exc.kind, exc.stage, exc.message) from None
    except SimConfigError as exc:
        raise base.AdapterError("UnsupportedError", stage, f"sim: {exc.message}") from None
    except (LayoutError, ModelInputError) as exc:
        raise base.AdapterError("LayoutError", stage, exc.message) from None


def _tensor_out(tensor: SimTensor) -> base.TensorOut:
    return base.TensorOut(
        name=tensor.name,
        data=tensor.data,
        layout=tensor.layout,
        dtype=tensor.dtype,
        shape=list(tensor.shape),
        attributes=dict(tensor.attributes),
    )


class SimAdapter(base.Adapter):
    """A simulated board of ``options["target"]``."""

    name = "sim"
    simulated = True
    log_level_env = SIM_LOG_LEVEL_ENV

    def __init__(self, options: Dict[str, Any]) -> None:
        super().__init__(options)
        with _typed_errors("init"):
            self.npu = SimNpu(options=self.options)
        self.canary: bytes | None = None

    def versions(self) -> Dict[str, str]:
        return self.npu.versions()

    def load(self, model_path: str) -> SimModel:
        with _typed_errors("load"):
            return self.npu.load(model_path)

    def run(
        self, model: Any, inputs: List[base.InputTensor], outputs: Optional[List[str]]
    ) -> base.RunOutput:
        if not isinstance(model, SimModel):
            raise base.AdapterError(
                "DeviceError", "run", f"not a model this adapter loaded: {model!r}"
            )
        canary, self.canary = self.canary, None  # armed for one run
        with _typed_errors("run"):
            run = self.npu.run(model, inputs, outputs, canary=canary)
        return base.RunOutput(
            inputs=[_tensor_out(t) for t in run.inputs],
            outputs=[_tensor_out(t) for t in run.outputs],
            timings=dict(run.timings),
        )

    def fill_canary(self, model: Any, pattern: bytes) -> base.CanaryFill:
        """As a zero-copy runtime: the next run's input and output buffers start filled with
        the pattern, and the simulated NPU writes over it what it writes. Run through the
        vendor's other API path (``api_path``), the runtime allocates the outputs it hands back
        during the run, as that API does: nothing to fill."""
        if self.npu.options.api_path is not None:
            return base.CanaryFill(
                reason=(
                    f"the simulated {self.npu.options.api_path} path (the vendor's normal API) "
                    "hands back outputs it allocates during the run"
                )
            )
        self.canary = bytes(pattern)
        return base.CanaryFill(outputs=True, inputs=True)

    def release(self, model: Any) -> None:
        """Nothing to free: the model is a parsed ONNX graph."""


ADAPTER = SimAdapter
