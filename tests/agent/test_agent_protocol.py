"""The job protocol end to end: the host writes a job, the real agent runs it in a subprocess with
the test-only ``echo`` adapter, the host reads and verifies the result."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.agent.protocol import (
    ErrorRecord,
    InputSpec,
    JobSpec,
    read_result,
    result_files,
    write_job,
)
from npu_hil.harness.board import wire as board
from npu_hil.harness.board.loader import ADAPTERS_ENV
from npu_hil.harness.errors import DeviceError, LayoutError, ProtocolError, TransportError
from tests.agent.jobs import BOARD_PACKAGE, FAKE_ADAPTERS

AGENT = BOARD_PACKAGE


def run_agent(
    job_dir: Path, *extra: str, python: str = sys.executable, adapters: bool = True
) -> subprocess.CompletedProcess[bytes]:
    argv = [python, str(AGENT), str(job_dir), *extra]
    if adapters:
        argv += ["--adapters", str(FAKE_ADAPTERS)]
    return subprocess.run(argv, capture_output=True, timeout=60, check=False)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.rknn"
    path.write_bytes(b"not really a model\x00" * 10)
    return path


def echo_job(model: Path, **options: Any) -> JobSpec:
    return JobSpec(
        job_id="job-1",
        adapter="echo",
        model=model,
        inputs=(
            InputSpec("images", "NCHW", (1, 3, 4, 5), "float32"),
            InputSpec("packed", "NC1HWC2", (1, 3, 4, 5), "int8", pass_through=True),
        ),
        adapter_options=options,
        load_timeout_s=10,
        run_timeout_s=10,
    )


def echo_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {
        "images": rng.standard_normal((1, 3, 4, 5)).astype(np.float32),
        # A packed device buffer whose size has nothing to do with prod(shape): it is passed
        # through untouched.
        "packed": rng.integers(0, 256, 4 * 5 * 16, dtype=np.uint8),
    }


@pytest.mark.slow
def test_round_trip_one_shot(tmp_path: Path, model: Path) -> None:
    job_dir = tmp_path / "job"
    inputs = echo_inputs()
    document = write_job(job_dir, echo_job(model), inputs)
    assert document["schema"] == board.JOB_SCHEMA == "npu-hil-job/1"
    assert document["model"]["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()

    done = run_agent(job_dir)
    assert done.returncode == board.EXIT_OK, done.stderr.decode()
    assert done.stdout == b""

    result = read_result(job_dir, job_id="job-1")
    assert result.ok and not result.errors
    assert result.schema == board.RESULT_SCHEMA == "npu-hil-result/1"
    assert result.adapter == "echo"
    assert result.versions["runtime"] == "echo 1.0"
    for key in ("python", "numpy", "platform", "agent"):
        assert result.versions[key]
    assert result.timings.total_s >= result.timings.load_s >= 0
    assert not result.timings.model_cached

    # Every file the result names exists with the announced size and sha256, checked here
    # independently of read_result.
    raw = json.loads((job_dir / "result.json").read_text())
    assert set(raw) >= {
        "schema",
        "job_id",
        "ok",
        "adapter",
        "versions",
        "timings",
        "inputs",
        "outputs",
        "errors",
    }
    for record in raw["inputs"] + raw["outputs"]:
        assert set(record) == {
            "name",
            "file",
            "sha256",
            "nbytes",
            "layout",
            "dtype",
            "shape",
            "attributes",
        }
        blob = (job_dir / record["file"]).read_bytes()
        assert len(blob) == record["nbytes"]
        assert hashlib.sha256(blob).hexdigest() == record["sha256"]
    assert [r["file"] for r in raw["inputs"]] == ["in_0.bin", "in_1.bin"]
    assert [r["file"] for r in raw["outputs"]] == ["out_0.bin", "out_1.bin"]

    # The device input buffers come back byte for byte, with the runtime's attributes.
    images = result.input("images")
    assert images.data.dtype == np.uint8
    assert images.data.tobytes() == inputs["images"].tobytes()
    assert (images.layout, images.dtype, images.shape) == ("NCHW", "float32", (1, 3, 4, 5))
    assert images.attributes["size"] == inputs["images"].nbytes
    assert result.input("packed").data.tobytes() == inputs["packed"].tobytes()
    assert result.input("packed").attributes["pass_through"] is True
    out = result.output("images_out")
    assert np.array_equal(out.data.view(np.float32).reshape(out.shape), inputs["images"])
    assert out.attributes["w_stride"] == [5]
    assert "images_out" in result.summary()
    with pytest.raises(KeyError, match="images_out"):
        result.output("nope")


@pytest.mark.slow
def test_outputs_can_be_selected(tmp_path: Path, model: Path) -> None:
    spec = echo_job(model)
    spec = JobSpec(**{**spec.__dict__, "outputs": ("packed_out",)})
    write_job(tmp_path, spec, echo_inputs())
    assert run_agent(tmp_path).returncode == 0
    assert [t.name for t in read_result(tmp_path).outputs] == ["packed_out"]


@pytest.mark.slow
def test_adapters_folder_from_environment(tmp_path: Path, model: Path) -> None:
    write_job(tmp_path, echo_job(model), echo_inputs())
    env = {**os.environ, ADAPTERS_ENV: str(FAKE_ADAPTERS)}
    done = subprocess.run(
        [sys.executable, str(AGENT), str(tmp_path)], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode()
    assert read_result(tmp_path).ok


@pytest.mark.slow
def test_adapter_error_is_a_typed_record(tmp_path: Path, model: Path) -> None:
    fault = {"stage": "run", "kind": "LayoutError", "message": "NC1HWC2 needs C2=16 here"}
    write_job(tmp_path, echo_job(model, **{"raise": fault}), echo_inputs())
    done = run_agent(tmp_path)
    assert done.returncode == board.EXIT_OK  # the job ran; the runtime refused it
    result = read_result(tmp_path)
    assert not result.ok and not result.outputs
    assert result.errors == (ErrorRecord("LayoutError", "run", "NC1HWC2 needs C2=16 here", code=7),)
    error = result.error()
    assert isinstance(error, LayoutError)
    assert "job job-1" in str(error) and "C2=16" in str(error)
    with pytest.raises(LayoutError):
        result.raise_for_errors()


@pytest.mark.slow
def test_adapter_bug_is_a_device_error_with_traceback(tmp_path: Path, model: Path) -> None:
    write_job(tmp_path, echo_job(model, fail={"stage": "load"}), echo_inputs())
    assert run_agent(tmp_path).returncode == board.EXIT_OK
    (record,) = read_result(tmp_path).errors
    assert (record.type, record.stage) == ("DeviceError", "load")
    assert "ValueError: echo has a bug in load" in record.message
    assert record.detail is not None and "_misbehave" in record.detail
    assert isinstance(record.exception(), DeviceError)


@pytest.mark.slow
def test_timeout_in_one_shot_mode(tmp_path: Path, model: Path) -> None:
    spec = echo_job(model, hang={"stage": "run", "seconds": 60})
    spec = JobSpec(**{**spec.__dict__, "run_timeout_s": 0.5})
    write_job(tmp_path, spec, echo_inputs())
    done = run_agent(tmp_path)
    assert done.returncode == board.EXIT_TIMEOUT
    (record,) = read_result(tmp_path).errors
    assert (record.type, record.stage) == ("TimeoutError", "run")
    assert "within 0.5 s" in record.message
    assert isinstance(record.exception(), TransportError)


@pytest.mark.parametrize(
    ("record", "kind"),
    [
        ({"type": "DeviceError", "stage": "load", "message": "m"}, DeviceError),
        ({"type": "UnsupportedError", "stage": "init", "message": "m"}, DeviceError),
        ({"type": "AgentError", "stage": "agent", "message": "m"}, DeviceError),
        ({"type": "LayoutError", "stage": "run", "message": "m"}, LayoutError),
        ({"type": "TimeoutError", "stage": "run", "message": "m"}, TransportError),
        (
            {"type": "JobError", "stage": "validate", "message": "m", "reason": "path"},
            ProtocolError,
        ),
        (
            {"type": "JobError", "stage": "validate", "message": "m", "reason": "checksum"},
            TransportError,
        ),
        (
            {"type": "JobError", "stage": "validate", "message": "m", "reason": "size"},
            TransportError,
        ),
    ],
)
def test_error_records_map_onto_the_hierarchy(
    tmp_path: Path, record: dict[str, Any], kind: type[Exception]
) -> None:
    (tmp_path / "result.json").write_text(
        json.dumps(
            {
                "schema": board.RESULT_SCHEMA,
                "job_id": "j",
                "ok": False,
                "adapter": "echo",
                "versions": {},
                "timings": {},
                "inputs": [],
                "outputs": [],
                "errors": [record],
            }
        )
    )
    error = read_result(tmp_path).error()
    assert type(error) is kind
    assert "job j:" in str(error)


# --- the host refuses results it cannot trust ----------------------------------------------------


@pytest.fixture
def finished_job(tmp_path: Path, model: Path) -> Path:
    write_job(tmp_path, echo_job(model), echo_inputs())
    assert run_agent(tmp_path).returncode == 0
    return tmp_path


def edit_result(job_dir: Path, **changes: Any) -> None:
    path = job_dir / "result.json"
    document = json.loads(path.read_text())
    document.update(changes)
    path.write_text(json.dumps(document))


@pytest.mark.slow
def test_unknown_major_version_is_refused(finished_job: Path) -> None:
    edit_result(finished_job, schema="npu-hil-result/2")
    with pytest.raises(
        ProtocolError, match=r"major version 2; this harness reads npu-hil-result/1"
    ):
        read_result(finished_job)


@pytest.mark.slow
def test_newer_minor_version_is_read(finished_job: Path) -> None:
    edit_result(finished_job, schema="npu-hil-result/1.3", something_new=True)
    assert read_result(finished_job).ok


@pytest.mark.slow
@pytest.mark.parametrize("schema", [None, "npu-hil-job/1", "result/1", 1])
def test_foreign_schema_is_refused(finished_job: Path, schema: Any) -> None:
    edit_result(finished_job, schema=schema)
    with pytest.raises(ProtocolError, match="expected 'npu-hil-result/1'"):
        read_result(finished_job)


@pytest.mark.slow
def test_corrupted_blob_is_detected(finished_job: Path) -> None:
    blob = finished_job / "out_0.bin"
    data = bytearray(blob.read_bytes())
    data[17] ^= 0x40
    blob.write_bytes(bytes(data))
    with pytest.raises(TransportError, match=r"out_0\.bin: sha256 [0-9a-f]{64}, the agent wrote"):
        read_result(finished_job)


@pytest.mark.slow
def test_truncated_blob_is_detected(finished_job: Path) -> None:
    blob = finished_job / "in_1.bin"
    blob.write_bytes(blob.read_bytes()[:-1])
    with pytest.raises(TransportError, match=r"in_1\.bin: 319 bytes, the agent wrote 320"):
        read_result(finished_job)


@pytest.mark.slow
def test_missing_blob_is_detected(finished_job: Path) -> None:
    (finished_job / "out_1.bin").unlink()
    with pytest.raises(TransportError, match=r"out_1\.bin: missing"):
        read_result(finished_job)


@pytest.mark.slow
def test_truncated_result_json_is_a_transport_error(finished_job: Path) -> None:
    path = finished_job / "result.json"
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(TransportError, match="unreadable"):
        read_result(finished_job)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["../job.json", "/etc/passwd", "a/../../b"])
def test_result_naming_files_outside_the_job_is_refused(finished_job: Path, name: str) -> None:
    document = json.loads((finished_job / "result.json").read_text())
    document["outputs"][0]["file"] = name
    with pytest.raises(ProtocolError, match="leaves the job directory"):
        result_files(document)
    (finished_job / "result.json").write_text(json.dumps(document))
    with pytest.raises(ProtocolError, match=r"outputs\[0\]\.file"):
        read_result(finished_job)


@pytest.mark.slow
def test_result_of_another_job_is_refused(finished_job: Path) -> None:
    with pytest.raises(ProtocolError, match="result of job 'job-1', expected job 'job-2'"):
        read_result(finished_job, job_id="job-2")


@pytest.mark.slow
def test_inconsistent_ok_flag_is_refused(finished_job: Path) -> None:
    edit_result(finished_job, ok=False)
    with pytest.raises(ProtocolError, match="ok is False with 0 error records"):
        read_result(finished_job)


# --- the host refuses to write a job it knows is wrong -------------------------------------------


def test_write_job_checks_arrays(tmp_path: Path, model: Path) -> None:
    spec = echo_job(model)
    good = echo_inputs()
    with pytest.raises(LayoutError, match=r"expected float32 \(1, 3, 4, 5\), got float64"):
        write_job(tmp_path, spec, {**good, "images": good["images"].astype(np.float64)})
    with pytest.raises(LayoutError, match="packed device buffer"):
        write_job(tmp_path, spec, {**good, "packed": good["images"]})
    with pytest.raises(LayoutError, match=r"no array for \['packed'\]"):
        write_job(tmp_path, spec, {"images": good["images"]})
    with pytest.raises(LayoutError, match="has 2 inputs, got 1 arrays"):
        write_job(tmp_path, spec, [good["images"]])
    assert not (tmp_path / "job.json").exists()


def test_frames_round_trip() -> None:
    message = {"op": "job", "dir": "jobs/x", "value": np.int64(3)}
    frame = board.encode_frame(message)
    assert frame[:8] == len(frame[8:]).to_bytes(8, "big")
    assert board.frame_length(frame[:8]) == len(frame) - 8
    assert board.decode_frame(frame[8:]) == {"op": "job", "dir": "jobs/x", "value": 3}
    with pytest.raises(ValueError, match="not npu-hil frames"):
        board.frame_length(b"Hello, w")
