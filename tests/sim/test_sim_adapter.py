"""The ``sim`` runtime adapter: the agent's contract (adapters/base.py) in-process, loaded the way
the agent loads adapters (from the host's adapter folder, beside the board package's base), and
end to end through the real agent (a one-shot ``python npu_hil/harness/board --serve
--adapters ...``: the job as one frame, its answer with the device buffers)."""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sim_helpers import random_tensor

from npu_hil.harness.agent.client import BOARD_SOURCE, HOST_ADAPTERS
from npu_hil.harness.agent.protocol import InputSpec, JobSpec
from npu_hil.harness.board.loader import load_adapter_base
from npu_hil.harness.board.wire import EXIT_OK, EXIT_TIMEOUT
from npu_hil.harness.diff import diff_buffers
from npu_hil.harness.expect import expect_run
from npu_hil.harness.models import build, save
from tests.agent.jobs import OneShot, run_once

ROOT = Path(__file__).resolve().parents[2]
# Where the agent finds the adapter: the host's folder, then the board package's own (its base).
ADAPTERS = os.pathsep.join([str(HOST_ADAPTERS), str(BOARD_SOURCE / "adapters")])

# The classes as the agent has them: adapters.base, and the sim adapter built on it.
_base = load_adapter_base(ADAPTERS.split(os.pathsep))
Adapter, AdapterError, InputTensor = _base.Adapter, _base.AdapterError, _base.InputTensor
RunOutput, TensorOut = _base.RunOutput, _base.TensorOut
ADAPTER = importlib.import_module("adapters.sim").ADAPTER


def tensor(name: str, values: np.ndarray, layout: str = "NCHW") -> InputTensor:
    data = values.reshape(-1).view(np.uint8)
    return InputTensor(name, data, layout, list(values.shape), values.dtype.name, False)


def test_the_adapter_runs_and_reports(tmp_path: Path) -> None:
    assert issubclass(ADAPTER, Adapter) and ADAPTER.name == "sim"
    model = build("conv3x3", (1, 3, 5, 7), out_channels=20)
    path = save(model, tmp_path / "model.onnx")
    adapter = ADAPTER({"target": "rv1106"})
    assert adapter.versions()["target"] == "rv1106"
    handle = adapter.load(str(path))
    image = random_tensor((1, 3, 5, 7), "uint8")
    run = adapter.run(handle, [tensor("input", image)], None)
    assert isinstance(run, RunOutput) and run.timings["run_s"] >= 0
    assert all(isinstance(t, TensorOut) for t in [*run.inputs, *run.outputs])
    assert (run.inputs[0].layout, run.outputs[0].layout) == ("NHWC", "NC1HWC2")
    assert run.outputs[0].attributes["fmt"] == "NC1HWC2"
    json.dumps([t.attributes for t in [*run.inputs, *run.outputs]])
    inputs, outputs = expect_run("rv1106", model, {"input": image}, run.inputs, run.outputs)
    for expected, device in zip([*inputs, *outputs], [*run.inputs, *run.outputs], strict=True):
        assert diff_buffers(expected.layout, expected.values, device.data).verdict == "equal"
    adapter.release(handle)


def _error(call: Any) -> AdapterError:
    with pytest.raises(AdapterError) as exc:
        call()
    return exc.value


@pytest.mark.parametrize(
    ("options", "kind", "stage", "match"),
    [
        ({"target": "rk9999"}, "UnsupportedError", "init", "unknown target"),
        ({"target": "kl730", "precision": "int8"}, "UnsupportedError", "init", "unknown option"),
        ({"target": "rk3588", "faults": ["melt"]}, "UnsupportedError", "init", "unknown fault"),
        ({"target": "rk3588", "output_layout": "NCWH"}, "LayoutError", "init", "output_layout"),
    ],
)
def test_bad_options_are_typed_errors(
    options: dict[str, Any], kind: str, stage: str, match: str
) -> None:
    error = _error(lambda: ADAPTER(options))
    assert (error.kind, error.stage) == (kind, stage) and match in error.message
    assert error.record()["type"] == kind


def test_refusals_are_typed_errors(tmp_path: Path) -> None:
    # one channel: the seed's rule A (the compiler's measured limit covers 3 channels)
    wide = save(build("conv3x3", (1, 1, 1, 2390)), tmp_path / "wide.onnx")
    error = _error(lambda: ADAPTER({"target": "rk3566"}).load(str(wide)))
    assert (error.kind, error.stage) == ("DeviceError", "load") and "rule A" in error.message
    error = _error(lambda: ADAPTER({"target": "rk3566"}).load(str(tmp_path / "m.rknn")))
    assert (error.kind, error.stage) == ("UnsupportedError", "load")

    path = save(build("identity", (1, 3, 2, 5)), tmp_path / "identity.onnx")
    floats = tensor("input", random_tensor((1, 3, 2, 5), "float32"))
    adapter = ADAPTER({"target": "rv1103"})
    error = _error(lambda: adapter.run(adapter.load(str(path)), [floats], None))
    assert (error.kind, error.stage) == ("DeviceError", "run") and "note 7" in error.message

    image = tensor("input", random_tensor((1, 3, 2, 5), "uint8"))
    horizon = ADAPTER({"target": "rdk-x5", "buffer_offset": 4})
    error = _error(lambda: horizon.run(horizon.load(str(path)), [image], None))
    assert (error.kind, error.stage) == ("DeviceError", "run") and "32-byte" in error.message

    error = _error(lambda: adapter.run(adapter.load(str(path)), [image], ["logits"]))
    assert (error.kind, error.stage) == ("LayoutError", "run")
    error = _error(lambda: adapter.run("not a model", [image], None))
    assert error.kind == "DeviceError"

    options = {"target": "rk3588", "faults": ["dirty-padding"], "output_layout": "NCHW"}
    no_padding = ADAPTER(options)
    error = _error(lambda: no_padding.run(no_padding.load(str(path)), [image], None))
    assert (error.kind, error.stage) == ("UnsupportedError", "run")


LOADER = """
import importlib, importlib.machinery, importlib.util, json, os, sys
import numpy as np
spec = importlib.machinery.ModuleSpec("adapters", None, is_package=True)
spec.submodule_search_locations = sys.argv[1].split(os.pathsep)
sys.modules["adapters"] = importlib.util.module_from_spec(spec)
base = importlib.import_module("adapters.base")
sim = importlib.import_module("adapters.sim")
adapter = sim.ADAPTER({"target": "rdk-s100"})
try:
    adapter.load("model.nef")
except base.AdapterError as exc:
    refused = exc.kind
from npu_hil.harness.models import build, save
from tests.agent.jobs import OneShot, run_once
model = adapter.load(str(save(build("identity", (1, 3, 2, 5)), sys.argv[2])))
x = np.zeros((1, 3, 2, 5), np.uint8)
given = base.InputTensor("input", x.reshape(-1), "NCHW", [1, 3, 2, 5], "uint8", False)
run = adapter.run(model, [given], None)
print(json.dumps({
    "subclass": issubclass(sim.ADAPTER, base.Adapter),
    "refused": refused,
    "run_output": isinstance(run, base.RunOutput),
    "tensor_out": all(isinstance(t, base.TensorOut) for t in run.outputs),
}))
"""


@pytest.mark.slow
def test_loaded_as_the_agent_loads_adapters(tmp_path: Path) -> None:
    """From the agent's ``adapters`` package, the classes are that package's own."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", LOADER, ADAPTERS, str(tmp_path / "m.onnx")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=True,
    )
    assert json.loads(out.stdout) == {
        "subclass": True,
        "refused": "UnsupportedError",
        "run_output": True,
        "tensor_out": True,
    }


# --------------------------------------------------------------- through the real agent


def sim_spec(
    folder: Path, target: str, model_name: str, shape: tuple[int, ...], **options: Any
) -> tuple[JobSpec, Any, dict[str, np.ndarray]]:
    """A job for the ``sim`` adapter on ``target`` (its ONNX model saved in ``folder``), the
    model and its input."""
    folder.mkdir()
    run_timeout = options.pop("run_timeout", 60)
    model = build(model_name, shape)
    path = save(model, folder / "model.onnx")
    given = {"input": random_tensor(shape, "int8" if target == "kl730" else "uint8")}
    spec = JobSpec(
        job_id=folder.name,
        adapter="sim",
        model=path,
        inputs=(InputSpec("input", "NCHW", shape, given["input"].dtype.name),),
        adapter_options={"target": target, **options},
        load_timeout_s=60,
        run_timeout_s=run_timeout,
    )
    return spec, model, given


def agent(
    tmp_path: Path, spec: JobSpec, given: dict[str, np.ndarray], timeout: float = 120
) -> OneShot:
    """The job run by a one-shot agent that finds the adapter in the host's folder."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return run_once(
        tmp_path / "board",
        spec,
        given,
        "--adapters",
        str(HOST_ADAPTERS),
        adapters=False,
        env=env,
        timeout=timeout,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("target", "faults", "equal"),
    [("kl730", [], True), ("rk3562", ["byte-swap"], False)],
)
def test_a_job_through_the_agent(
    tmp_path: Path, target: str, faults: list[str], equal: bool
) -> None:
    spec, model, given = sim_spec(tmp_path / "job", target, "conv1x1", (1, 3, 3, 5), faults=faults)
    done = agent(tmp_path, spec, given)
    assert done.returncode == 0 and done.status == EXIT_OK, done.stderr
    result = done.result("job")
    assert result.ok, result.errors
    assert result.versions["runtime"] == "npu-hil simulated NPU"
    expected_in, expected_out = expect_run(target, model, given, result.inputs, result.outputs)
    assert diff_buffers(expected_in[0].layout, expected_in[0].values, result.inputs[0].data).ok
    report = diff_buffers(expected_out[0].layout, expected_out[0].values, result.outputs[0].data)
    assert report.ok == equal, report.summary()


@pytest.mark.slow
def test_a_refusal_through_the_agent_is_a_typed_record(tmp_path: Path) -> None:
    spec, _, given = sim_spec(
        tmp_path / "job", "rdk-s100", "identity", (1, 3, 3, 5), buffer_offset=8
    )
    done = agent(tmp_path, spec, given)
    assert done.returncode == 0 and done.status == EXIT_OK, done.stderr
    result = done.result("job")
    assert not result.ok
    assert [(e.type, e.stage) for e in result.errors] == [("DeviceError", "run")]


@pytest.mark.slow
def test_a_hung_board_times_out_in_the_agent(tmp_path: Path) -> None:
    spec, _, given = sim_spec(
        tmp_path / "job", "rk3588", "identity", (1, 3, 3, 5), faults=["hang"], run_timeout=1
    )
    done = agent(tmp_path, spec, given)
    # The answer says so and asks for a restart; the agent leaves at once, the call still stuck.
    assert done.status == EXIT_TIMEOUT and done.returncode == EXIT_TIMEOUT, done.stderr
    assert done.response is not None and done.response["restart"] is True
    assert [(e["type"], e["stage"]) for e in done.errors] == [("TimeoutError", "run")]
    assert [f["op"] for f in done.frames] == ["hello", "job"]  # the shutdown never answered


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_crashed_board_takes_the_agent_down(tmp_path: Path) -> None:
    spec, _, given = sim_spec(
        tmp_path / "job", "rk3588", "identity", (1, 3, 3, 5), faults=["crash"]
    )
    done = agent(tmp_path, spec, given)
    assert done.returncode == -signal.SIGSEGV
    assert done.response is None and [f["op"] for f in done.frames] == ["hello"]
    assert "Segmentation fault" in done.stderr  # the faulthandler's traceback in the log
