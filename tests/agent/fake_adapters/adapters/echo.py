"""A test-only runtime adapter: every input comes back as an output, byte for byte.

The agent finds it through ``--adapters tests/agent/fake_adapters/adapters`` (or the
``NPU_HIL_AGENT_ADAPTERS`` variable); ``adapters.base`` still comes from beside the agent. Options
make it misbehave on purpose:

- ``hang``: ``{"stage": "load"|"run", "seconds": s}`` sleeps in that call (a hung vendor call);
- ``raise``: ``{"stage": ..., "kind": "DeviceError", "message": ...}`` raises AdapterError;
- ``crash``: ``{"stage": ..., "how": "exit"|"abort"|"segv"}`` kills the whole process;
- ``fail``: ``{"stage": ...}`` raises a plain ValueError (an adapter bug);
- ``print``: writes to stdout from Python and from C, which must not reach the session stream;
- ``journal``: a file path; every init/load/run/release appends a line there, so a test can see
  what happened inside a session after it ended.

Counters in each output's attributes (``loads``, ``runs``, ``releases``, ``instance``) let the tests
see whether a model was loaded again.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import sys
import time
from typing import Any

from adapters.base import Adapter, AdapterError, InputTensor, RunOutput, TensorOut

_INSTANCES = 0


class EchoAdapter(Adapter):
    name = "echo"

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__(options)
        global _INSTANCES
        _INSTANCES += 1
        self.instance = _INSTANCES
        self.loads = 0
        self.runs = 0
        self.releases = 0
        self._note("init")
        self._misbehave("init")

    def _note(self, line: str) -> None:
        journal = self.options.get("journal")
        if journal:
            with open(journal, "a") as handle:
                handle.write(f"{self.instance} {line}\n")

    def _misbehave(self, stage: str) -> None:
        hang = self.options.get("hang")
        if hang and hang.get("stage") == stage:
            time.sleep(float(hang.get("seconds", 3600)))
        fault = self.options.get("raise")
        if fault and fault.get("stage") == stage:
            raise AdapterError(
                fault.get("kind", "DeviceError"), stage, fault.get("message", "echo refuses"), 7
            )
        crash = self.options.get("crash")
        if crash and crash.get("stage") == stage:
            sys.stderr.write(f"echo: crashing on purpose in {stage}\n")
            sys.stderr.flush()
            how = crash.get("how", "exit")
            if how == "abort":
                os.abort()
            if how == "segv":
                ctypes.string_at(0)
            os._exit(70)
        fail = self.options.get("fail")
        if fail and fail.get("stage") == stage:
            raise ValueError(f"echo has a bug in {stage}")
        if self.options.get("print"):
            print(f"echo: noise on Python's stdout during {stage}")
            libc = ctypes.CDLL(None)
            libc.printf(b"echo: noise on fd 1 from C during %s\n", stage.encode())
            libc.fflush(None)

    def versions(self) -> dict[str, str]:
        return {"runtime": "echo 1.0", "driver": "none"}

    def load(self, model_path: str) -> Any:
        self.loads += 1
        self._misbehave("load")
        with open(model_path, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
        self._note(f"load {digest}")
        return {"path": model_path, "sha256": digest}

    def run(self, model: Any, inputs: list[InputTensor], outputs: list[str] | None) -> RunOutput:
        self.runs += 1
        self._note(f"run {model['sha256']}")
        self._misbehave("run")
        counters = {
            "loads": self.loads,
            "runs": self.runs,
            "releases": self.releases,
            "instance": self.instance,
            "model_sha256": model["sha256"],
        }
        device_inputs = []
        device_outputs = []
        for tensor in inputs:
            attributes = dict(
                counters, size=int(tensor.data.size), pass_through=tensor.pass_through
            )
            device_inputs.append(
                TensorOut(
                    tensor.name,
                    tensor.data.copy(),
                    tensor.layout,
                    tensor.dtype,
                    tensor.shape,
                    attributes,
                )
            )
            if outputs is None or tensor.name + "_out" in outputs:
                device_outputs.append(
                    TensorOut(
                        tensor.name + "_out",
                        tensor.data.copy(),
                        tensor.layout,
                        tensor.dtype,
                        tensor.shape,
                        dict(attributes, w_stride=tensor.shape[-1:] or [1]),
                    )
                )
        return RunOutput(device_inputs, device_outputs, {"run_s": 0.0001})

    def release(self, model: Any) -> None:
        self.releases += 1
        self._note(f"release {model['sha256']}")
        self._misbehave("release")


ADAPTER = EchoAdapter
