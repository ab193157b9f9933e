"""The simulated NPU: loads an ONNX model, runs it as the target's runtime would, and hands back
the device's input and output buffers with the runtime's own attributes (docs/runtime/agent.md,
"The simulated NPU"). A run's ``timings["run_s"]`` is the modeled device time
(:mod:`npu_hil.harness.sim.timing`); ``host_s`` is the host's wall time for the model.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.models import numerics as npu_numerics
from npu_hil.harness.sim import execute
from npu_hil.harness.sim.faults import (
    apply_buffer_faults,
    apply_log_fault,
    apply_process_faults,
    apply_soak_faults,
    apply_stale_output,
    apply_timing_faults,
    apply_unaligned_width,
    runtime_info,
)
from npu_hil.harness.sim.options import SimOptions, unit_of
from npu_hil.harness.sim.timing import Work, count_work, modeled_s
from npu_hil.harness.simkit.base import VendorSim
from npu_hil.harness.simkit.errors import SimConfigError, SimRefusal
from npu_hil.harness.simkit.graph import GraphInfo, inspect
from npu_hil.harness.simkit.tensors import InputLike, SimRun, SimTensor
from npu_hil.targets.registry import units

RUNTIME_NAME = "npu-hil simulated NPU"


@dataclass
class SimModel:
    """A loaded model: the ONNX graph and what the runtime read off it."""

    proto: onnx.ModelProto
    graph: GraphInfo
    source: str
    work: Work = field(default_factory=Work)
    """What one run costs the modeled NPU (:func:`npu_hil.harness.sim.timing.count_work`)."""
    calibration: list[dict[str, np.ndarray]] = field(default_factory=list)
    """A dataset the model's quantization is calibrated on (:meth:`SimNpu.calibrate`); empty:
    each run's own inputs."""


def _vendor_sim(options: SimOptions) -> VendorSim:
    """The vendor unit's simulated runtime for the target (named ``module:attribute`` where the
    unit does not hold the factory itself)."""
    factory = unit_of(options.target).simulator
    if isinstance(factory, str):
        module, _, attribute = factory.partition(":")
        factory = getattr(importlib.import_module(module), attribute)
    if not callable(factory):
        raise SimConfigError(f"{options.target}: its vendor unit has no simulated runtime")
    sim = factory(options)
    if not isinstance(sim, VendorSim):
        raise SimConfigError(f"{options.target}: the vendor's simulator is not a VendorSim")
    return sim


class SimNpu:
    """One simulated board. ``options`` as :class:`SimOptions` takes them (``target`` given here
    or in the mapping); keyword arguments are merged in."""

    def __init__(
        self,
        target: str | None = None,
        options: Mapping[str, Any] | None = None,
        **more: Any,
    ) -> None:
        merged = {**(options or {}), **more}
        if target is not None:
            merged["target"] = target
        self.options = SimOptions.from_mapping(merged)
        self.target = self.options.target
        self.executor = execute.resolve(self.options.executor)
        self.vendor = _vendor_sim(self.options)
        # The NPU's memory of earlier runs (per model and output), for the stale-output fault.
        self.memory: dict[Any, np.ndarray] = {}
        self.calls = 0
        """Runs so far: the modeled time's spread and the timing faults draw from it."""

    def versions(self) -> dict[str, str]:
        versions = {
            "runtime": RUNTIME_NAME,
            "target": self.target,
            "vendor": self.options.vendor,
            "executor": self.executor,
            "onnx": onnx.__version__,
        }
        if self.executor == "onnxruntime":
            versions["onnxruntime"] = str(importlib.import_module("onnxruntime").__version__)
        # A runtime version it stands in for (a runtime matrix): reported as the real one's.
        versions.update(self.options.runtime_versions)
        return versions

    def load(self, model: onnx.ModelProto | str | os.PathLike[str]) -> SimModel:
        """Read the ONNX model and refuse what the runtime refuses to load."""
        if isinstance(model, onnx.ModelProto):
            proto, source = model, "<model>"
        else:
            path = Path(model)
            source = str(path)
            if path.suffix.lower() != ".onnx":
                suffixes = sorted({suffix for unit in units() for suffix in unit.artifact_suffixes})
                raise SimRefusal(
                    "UnsupportedError",
                    "load",
                    f"{path.name}: the simulated runtime runs ONNX reference models; compiled "
                    f"artifacts ({', '.join(suffixes)}) run on real boards",
                )
            try:
                proto = onnx.load_model(str(path))
            except Exception as exc:  # onnx raises DecodeError, OSError ...
                raise SimRefusal("DeviceError", "load", f"{path.name}: not a model: {exc}") from exc
        try:
            graph = inspect(proto)
        except Exception as exc:
            raise SimRefusal("DeviceError", "load", f"{source}: invalid model: {exc}") from exc
        execute.check(proto, self.executor)
        self.vendor.check_model(graph)
        apply_log_fault(self.options.faults, self.target, "load")
        runtime_info(f"loaded {source}")
        return SimModel(proto, graph, source, count_work(proto))

    def run(
        self,
        model: SimModel,
        inputs: Sequence[InputLike],
        outputs: Sequence[str] | None = None,
        canary: bytes | None = None,
    ) -> SimRun:
        """Run once. ``outputs`` names the outputs wanted (None: all). ``canary``: the pattern
        the agent filled every buffer with before the run; the simulated NPU writes the bytes it
        writes over it (all of them, unless a fault says otherwise)."""
        graph = model.graph
        given = self._given(graph, inputs)
        wanted = self._wanted(graph, outputs)
        runtime_info(f"run {self.calls} of {model.source}")
        apply_log_fault(self.options.faults, self.target, "run")
        started = time.perf_counter()
        held = [
            self.vendor.hold_input(i, info, given[info.name]) for i, info in enumerate(graph.inputs)
        ]
        set_s = time.perf_counter() - started
        path = self.options.api_path
        apply_unaligned_width(
            self.options.faults, "zero-copy" if path is None else "normal", held, self.target
        )
        started = time.perf_counter()
        feeds = {h.tensor.name: h.model_value for h in held}
        floats = self._compute(model, feeds)
        host_s = time.perf_counter() - started
        index = self.calls
        self.calls += 1
        run_s = apply_timing_faults(
            self.options.faults, modeled_s(model.work, self.target, index), index
        )
        started = time.perf_counter()
        result: list[SimTensor] = [
            self.vendor.hold_output(i, info, floats[info.name], graph)
            for i, info in enumerate(graph.outputs)
            if info.name in wanted
        ]
        device_inputs = [h.tensor for h in held]
        for tensor in (*device_inputs, *result):
            tensor.prior = _prior(canary, tensor.data.size)
        apply_buffer_faults(self.options.faults, device_inputs, result)
        apply_stale_output(self.options.faults, model.source, result, self.memory)
        if path is not None:
            # The other API path: the runtime converts what the NPU wrote, and hands back no
            # input buffer (the normal API's inputs cannot be read back).
            result = [self.vendor.normal_api_output(t, path) for t in result]
            device_inputs = []
        fetch_s = time.perf_counter() - started
        apply_process_faults(self.options.faults)
        apply_soak_faults(self.options.faults, index)
        # "modeled": the run time is the target's model, not a measurement (reports say so).
        timings = {"run_s": run_s, "copy_s": set_s + fetch_s, "host_s": host_s, "modeled": 1.0}
        return SimRun(device_inputs, result, timings)

    def calibrate(self, model: SimModel, samples: Sequence[Mapping[str, np.ndarray]]) -> None:
        """Calibrate ``model``'s quantization on ``samples`` (input name → float array), as a
        compiler is given a dataset, instead of on each run's own inputs (the host's expectation
        then no longer predicts the bytes: a board calibrated on a dataset is checked by its
        accuracy, as a real one is)."""
        names = {info.name for info in model.graph.inputs}
        for sample in samples:
            if set(sample) != names:
                raise SimConfigError(
                    f"a calibration sample gives {', '.join(sorted(sample))}; the model's "
                    f"inputs are {', '.join(sorted(names))}"
                )
        model.calibration[:] = [
            {k: np.asarray(v, np.float32) for k, v in sample.items()} for sample in samples
        ]

    @property
    def numerics(self) -> str:
        """How this board computes a model: the vendor's numerics, or the float graph (option
        ``numerics: float``, or the numpy executor, which runs float graphs only)."""
        if self.options.numerics == "float" or self.executor == "numpy":
            return "float"
        return self.vendor.numerics

    def _compute(self, model: SimModel, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self.options.numerics == "vendor":
            return self._vendor_simulator(model, feeds)
        numerics = self.numerics
        if numerics == "float":
            return execute.run(model.proto, feeds, self.executor)
        # Calibrated on this run's own inputs unless given a dataset: the host's expectation
        # computes the same model from the same inputs.
        calibration = model.calibration or [
            {k: np.asarray(v, np.float32) for k, v in feeds.items()}
        ]
        try:
            computed = npu_numerics.numeric_model(model.proto, numerics, calibration)
        except npu_numerics.NumericsError as exc:
            raise SimRefusal("UnsupportedError", "run", exc.message) from None
        outputs = execute.run(computed, feeds, self.executor, exact=True)
        # Integer outputs (ArgMax, TopK indices) and their dtypes are the float graph's.
        return {
            name: value.astype(np.float32) if value.dtype == np.float16 else value
            for name, value in outputs.items()
        }

    def _vendor_simulator(
        self, model: SimModel, feeds: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """The vendor's own simulator on this run's inputs (``numerics: vendor``)."""
        compiler = unit_of(self.target).compiler
        simulate = getattr(compiler, "simulate", None)
        if simulate is None:
            raise SimRefusal(
                "UnsupportedError", "run", f"{self.target}: its vendor has no simulator to run"
            )
        precision = "int8" if self.vendor.numerics == "int8" else "float16"
        calibration = model.calibration or [feeds]
        try:
            (outputs,) = simulate(model.proto, self.target, precision, calibration, [feeds])
        except NpuHilError as exc:
            raise SimRefusal("UnsupportedError", "run", exc.message) from None
        return {name: np.asarray(value, np.float32) for name, value in outputs.items()}

    @staticmethod
    def _given(graph: GraphInfo, inputs: Sequence[InputLike]) -> dict[str, InputLike]:
        given: dict[str, InputLike] = {}
        for tensor in inputs:
            if tensor.name in given:
                raise SimRefusal("LayoutError", "run", f"input {tensor.name!r} is given twice")
            given[tensor.name] = tensor
        names = [info.name for info in graph.inputs]
        unknown = sorted(set(given) - set(names))
        missing = [name for name in names if name not in given]
        if unknown or missing:
            raise SimRefusal(
                "LayoutError",
                "run",
                f"the model's inputs are {', '.join(names)}"
                + (f"; not set: {', '.join(missing)}" if missing else "")
                + (f"; unknown: {', '.join(unknown)}" if unknown else ""),
            )
        return given

    @staticmethod
    def _wanted(graph: GraphInfo, outputs: Sequence[str] | None) -> set[str]:
        names = [info.name for info in graph.outputs]
        if outputs is None:
            return set(names)
        unknown = sorted(set(outputs) - set(names))
        if unknown:
            raise SimRefusal(
                "LayoutError",
                "run",
                f"the model has no output {', '.join(unknown)}; outputs: {', '.join(names)}",
            )
        return set(outputs)


def _prior(canary: bytes | None, nbytes: int) -> np.ndarray:
    """A buffer's bytes before the run: the canary repeated from its first byte, or zeros."""
    if canary is None or nbytes == 0:
        return np.zeros(nbytes, dtype=np.uint8)
    return np.resize(np.frombuffer(canary, dtype=np.uint8), nbytes)
