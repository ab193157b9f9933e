"""The ``sim`` runtime adapter: the agent's contract (adapters/base.py) in-process, loaded the way
the agent loads adapters (from the host's adapter folder, beside the board package's base), and
end to end through the real agent (``python npu_hil/harness/board JOB_DIR --adapters ...``)."""

from __future__ import annotations

import hashlib
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
from npu_hil.harness.board.loader import load_adapter_base
from npu_hil.harness.diff import diff_buffers
from npu_hil.harness.expect import expect_run
from npu_hil.harness.models import build, save

ROOT = Path(__file__).resolve().parents[2]
AGENT = BOARD_SOURCE
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


def write_job(
    job: Path, target: str, model_name: str, shape: tuple[int, ...], **options: Any
) -> tuple[Any, dict[str, np.ndarray]]:
    job.mkdir()
    run_timeout = options.pop("run_timeout", 60)
    model = build(model_name, shape)
    path = save(model, job / "model.onnx")
    given = {"input": random_tensor(shape, "int8" if target == "kl730" else "uint8")}
    given["input"].tofile(job / "in.bin")
    doc = {
        "schema": "npu-hil-job/1",
        "job_id": job.name,
        "model": {"path": "model.onnx", "sha256": hashlib.sha256(path.read_bytes()).hexdigest()},
        "adapter": "sim",
        "adapter_options": {"target": target, **options},
        "inputs": [
            {
                "name": "input",
                "file": "in.bin",
                "layout": "NCHW",
                "shape": list(shape),
                "dtype": given["input"].dtype.name,
                "pass_through": False,
            }
        ],
        "outputs": None,
        "timeouts": {"load": 60, "run": run_timeout},
    }
    (job / "job.json").write_text(json.dumps(doc))
    return model, given


def agent(job: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(AGENT), str(job), "--adapters", str(HOST_ADAPTERS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


class Blob:
    """A tensor record of result.json with its bytes, shaped like the adapter's TensorOut."""

    def __init__(self, job: Path, record: dict[str, Any]) -> None:
        self.name = record["name"]
        self.shape = record["shape"]
        self.attributes = record["attributes"]
        self.data = np.fromfile(job / record["file"], dtype=np.uint8)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("target", "faults", "equal"),
    [("kl730", [], True), ("rk3562", ["byte-swap"], False)],
)
def test_a_job_through_the_agent(
    tmp_path: Path, target: str, faults: list[str], equal: bool
) -> None:
    job = tmp_path / "job"
    model, given = write_job(job, target, "conv1x1", (1, 3, 3, 5), faults=faults)
    done = agent(job)
    assert done.returncode == 0, done.stderr
    result = json.loads((job / "result.json").read_text())
    assert result["ok"], result["errors"]
    assert result["versions"]["runtime"] == "npu-hil simulated NPU"
    inputs = [Blob(job, r) for r in result["inputs"]]
    outputs = [Blob(job, r) for r in result["outputs"]]
    expected_in, expected_out = expect_run(target, model, given, inputs, outputs)
    assert diff_buffers(expected_in[0].layout, expected_in[0].values, inputs[0].data).ok
    report = diff_buffers(expected_out[0].layout, expected_out[0].values, outputs[0].data)
    assert report.ok == equal, report.summary()


@pytest.mark.slow
def test_a_refusal_through_the_agent_is_a_typed_record(tmp_path: Path) -> None:
    job = tmp_path / "job"
    write_job(job, "rdk-s100", "identity", (1, 3, 3, 5), buffer_offset=8)
    assert agent(job).returncode == 0
    result = json.loads((job / "result.json").read_text())
    assert not result["ok"]
    assert [(e["type"], e["stage"]) for e in result["errors"]] == [("DeviceError", "run")]


@pytest.mark.slow
def test_a_hung_board_times_out_in_the_agent(tmp_path: Path) -> None:
    job = tmp_path / "job"
    write_job(job, "rk3588", "identity", (1, 3, 3, 5), faults=["hang"], run_timeout=1)
    done = agent(job)
    assert done.returncode == 3  # the agent's exit status for a timed-out adapter call
    result = json.loads((job / "result.json").read_text())
    assert [(e["type"], e["stage"]) for e in result["errors"]] == [("TimeoutError", "run")]


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_crashed_board_takes_the_agent_down(tmp_path: Path) -> None:
    job = tmp_path / "job"
    write_job(job, "rk3588", "identity", (1, 3, 3, 5), faults=["crash"])
    done = agent(job)
    assert done.returncode == -signal.SIGSEGV
    assert not (job / "result.json").exists()
