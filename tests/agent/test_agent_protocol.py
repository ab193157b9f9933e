"""The job protocol end to end: the host frames a job, a one-shot agent process (the real board
package with the test-only ``echo`` adapter, the job's bulk frame and a shutdown on its stdin)
runs it, and the host verifies the answer's result document and the device buffers its frame
carries, as the client does (:func:`~npu_hil.harness.agent.protocol.result_from_document`)."""

from __future__ import annotations

import copy
import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.agent.protocol import (
    BulkAnswer,
    ErrorRecord,
    InputSpec,
    JobSpec,
    ModelRef,
    Replay,
    Result,
    StreamEnded,
    frame_job,
    read_bulk,
    recv_exactly,
    result_from_document,
    result_records,
)
from npu_hil.harness.board import wire as board
from npu_hil.harness.board.loader import ADAPTERS_ENV
from npu_hil.harness.errors import DeviceError, LayoutError, ProtocolError, TransportError
from npu_hil.harness.transport import LocalTransport
from npu_hil.harness.transport.base import CompletedRun
from tests.agent.jobs import FAKE_ADAPTERS, OneShot, run_once

# The four buffers of the echo job's answer, inputs first: their names and sizes.
FILES = ["in_0.bin", "in_1.bin", "out_0.bin", "out_1.bin"]
SIZES = [240, 320, 240, 320]


def write_model(folder: Path) -> Path:
    path = folder / "model.rknn"
    path.write_bytes(b"not really a model\x00" * 10)
    return path


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return write_model(tmp_path)


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


def run(tmp_path: Path, spec: JobSpec, **options: Any) -> OneShot:
    """The echo job run by a one-shot agent in ``tmp_path/board``."""
    return run_once(tmp_path / "board", spec, echo_inputs(), **options)


@pytest.mark.slow
def test_round_trip_one_shot(tmp_path: Path, model: Path) -> None:
    inputs = echo_inputs()
    sent: list[dict[str, Any]] = []

    def keep_sent(document: dict[str, Any]) -> dict[str, Any]:
        sent.append(document)
        return document

    shot = run_once(tmp_path / "board", echo_job(model), inputs, edit=keep_sent)
    assert shot.returncode == board.EXIT_OK, shot.stderr
    assert shot.status == board.EXIT_OK
    # Nothing but frames on stdout: the hello, the job's answer, the shutdown's.
    assert [frame["op"] for frame in shot.frames] == ["hello", "job", "shutdown"]
    assert shot.response is not None and shot.response["restart"] is False
    # The job never touched the board's disk: the cache the model was deployed to is all there is.
    assert [p.name for p in (tmp_path / "board").iterdir()] == ["cache"]

    (document,) = sent
    assert document["schema"] == board.JOB_SCHEMA == "npu-hil-job/1"
    assert document["model"]["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    # The inputs go in the frame: each announces its size, none names a file.
    assert [i["nbytes"] for i in document["inputs"]] == [240, 320]
    assert not any("file" in i for i in document["inputs"])

    # The answer as the agent sent it, checked here independently of result_from_document:
    # every record names its buffer of the frame (inputs first), of the size the frame and the
    # record give, whose sha256 the frame's trailer carries.
    answer = shot.answer
    assert answer is not None
    raw = shot.response["result"]
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
    records = raw["inputs"] + raw["outputs"]
    for record in records:
        # No sha256 in the record: the trailer carries it, computed as the buffer was written.
        assert set(record) == {"name", "file", "nbytes", "layout", "dtype", "shape", "attributes"}
    assert [r["file"] for r in records] == FILES
    assert shot.response["bulk"] == [r["nbytes"] for r in records] == SIZES
    assert [len(b) for b in answer.buffers] == SIZES
    digests = [hashlib.sha256(b).hexdigest() for b in answer.buffers]
    assert answer.theirs == answer.ours == digests

    result = shot.result(job_id="job-1")
    assert result.ok and not result.errors
    assert result.schema == board.RESULT_SCHEMA == "npu-hil-result/1"
    assert result.adapter == "echo"
    assert result.versions["runtime"] == "echo 1.0"
    for key in ("python", "numpy", "platform", "agent"):
        assert result.versions[key]
    assert result.timings.total_s >= result.timings.load_s >= 0
    assert not result.timings.model_cached
    assert [t.sha256 for t in result.inputs + result.outputs] == digests
    assert [t.file for t in result.inputs + result.outputs] == FILES

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
    shot = run(tmp_path, spec)
    assert shot.status == board.EXIT_OK, shot.stderr
    result = shot.result()
    assert [t.name for t in result.outputs] == ["packed_out"]
    assert [t.file for t in result.inputs + result.outputs] == ["in_0.bin", "in_1.bin", "out_0.bin"]


@pytest.mark.slow
def test_adapters_folder_from_environment(tmp_path: Path, model: Path) -> None:
    """The extra adapter folder comes from the environment when the command line names none;
    without either the echo adapter is not on the board."""
    bare = {k: v for k, v in os.environ.items() if k != ADAPTERS_ENV}
    refused = run(tmp_path / "bare", echo_job(model), adapters=False, env=bare)
    assert refused.status == board.EXIT_REFUSED, refused.stderr
    (record,) = refused.errors
    assert record["field"] == "adapter" and "not an adapter on this board" in record["message"]

    env = {**bare, ADAPTERS_ENV: str(FAKE_ADAPTERS)}
    shot = run(tmp_path / "env", echo_job(model), adapters=False, env=env)
    assert shot.status == board.EXIT_OK, shot.stderr
    assert shot.result().ok


@pytest.mark.slow
def test_adapter_error_is_a_typed_record(tmp_path: Path, model: Path) -> None:
    fault = {"stage": "run", "kind": "LayoutError", "message": "NC1HWC2 needs C2=16 here"}
    shot = run(tmp_path, echo_job(model, **{"raise": fault}))
    assert shot.status == board.EXIT_OK  # the job ran; the runtime refused it
    result = shot.result()
    assert not result.ok and not result.outputs
    assert result.errors == (ErrorRecord("LayoutError", "run", "NC1HWC2 needs C2=16 here", code=7),)
    error = result.error()
    assert isinstance(error, LayoutError)
    assert "job job-1" in str(error) and "C2=16" in str(error)
    with pytest.raises(LayoutError):
        result.raise_for_errors()


@pytest.mark.slow
def test_adapter_bug_is_a_device_error_with_traceback(tmp_path: Path, model: Path) -> None:
    shot = run(tmp_path, echo_job(model, fail={"stage": "load"}))
    assert shot.status == board.EXIT_OK
    (record,) = shot.result().errors
    assert (record.type, record.stage) == ("DeviceError", "load")
    assert "ValueError: echo has a bug in load" in record.message
    assert record.detail is not None and "_misbehave" in record.detail
    assert isinstance(record.exception(), DeviceError)


@pytest.mark.slow
def test_timeout_in_one_shot_mode(tmp_path: Path, model: Path) -> None:
    """A hung runtime call: the agent answers with the timeout and ``restart``, then leaves at
    once with status 3 (the stuck call would hold its shutdown up), the shutdown unanswered."""
    spec = echo_job(model, hang={"stage": "run", "seconds": 60})
    spec = JobSpec(**{**spec.__dict__, "run_timeout_s": 0.5})
    shot = run(tmp_path, spec, timeout=30.0)
    assert shot.returncode == board.EXIT_TIMEOUT, shot.stderr
    assert shot.status == board.EXIT_TIMEOUT
    assert [frame["op"] for frame in shot.frames] == ["hello", "job"]
    assert shot.response is not None and shot.response["restart"] is True
    (record,) = shot.result().errors
    assert (record.type, record.stage) == ("TimeoutError", "run")
    assert "within 0.5 s" in record.message
    assert isinstance(record.exception(), TransportError)


def bare_result(**changes: Any) -> dict[str, Any]:
    """A result document of no buffers."""
    return {
        "schema": board.RESULT_SCHEMA,
        "job_id": "j",
        "ok": False,
        "adapter": "echo",
        "versions": {},
        "timings": {},
        "inputs": [],
        "outputs": [],
        "errors": [],
        **changes,
    }


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
    record: dict[str, Any], kind: type[Exception]
) -> None:
    # An answer of no buffers: a plain frame, as the agent sends for a job that made none.
    result = result_from_document(bare_result(errors=[record]), None, where="answer", job_id="j")
    error = result.error()
    assert type(error) is kind
    assert "job j:" in str(error)


# --- the host refuses answers it cannot trust ----------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> OneShot:
    """The echo job run once by a one-shot agent, for the tests below to tamper with copies of
    its answer."""
    folder = tmp_path_factory.mktemp("finished")
    shot = run(folder, echo_job(write_model(folder)))
    assert shot.status == board.EXIT_OK, shot.stderr
    return shot


@pytest.fixture
def answer(finished: OneShot) -> BulkAnswer:
    """A copy of the finished job's answer: its message (the result document in ``result``),
    its buffers and both sides' digests."""
    assert finished.answer is not None
    return copy.deepcopy(finished.answer)


def verify(answer: BulkAnswer | None, document: dict[str, Any], job_id: str = "job-1") -> Result:
    return result_from_document(document, answer, where="job job-1: the answer", job_id=job_id)


def result_of(answer: BulkAnswer) -> dict[str, Any]:
    document: dict[str, Any] = answer.message["result"]
    return document


def on_the_wire(answer: BulkAnswer) -> bytearray:
    """The answer's bulk frame as the agent writes it."""
    parts = board.encode_bulk_frame(answer.message, [memoryview(b) for b in answer.buffers])
    return bytearray(b"".join(bytes(part) for part in parts))


def read_back(wire: bytes | bytearray) -> BulkAnswer:
    """A bulk frame read as the client reads an answer: digests computed as the buffers come."""
    replay = Replay(bytes(wire))
    header = recv_exactly(replay, board.FRAME_HEADER.size, float("inf"))
    assert board.is_bulk(header)
    return read_bulk(replay, board.frame_length(header), float("inf"))


def offset_of(wire: bytearray, index: int, sizes: Sequence[int], digest: bool = False) -> int:
    """Where buffer ``index`` (or its digest in the trailer) starts in a bulk frame's bytes."""
    trailer = len(wire) - board.DIGEST_BYTES * len(sizes)
    if digest:
        return trailer + board.DIGEST_BYTES * index
    return trailer - sum(sizes[index:])


@pytest.mark.slow
def test_unknown_major_version_is_refused(answer: BulkAnswer) -> None:
    result_of(answer)["schema"] = "npu-hil-result/2"
    with pytest.raises(
        ProtocolError, match=r"major version 2; this harness reads npu-hil-result/1"
    ):
        verify(answer, result_of(answer))


@pytest.mark.slow
def test_newer_minor_version_is_read(answer: BulkAnswer) -> None:
    result_of(answer).update(schema="npu-hil-result/1.3", something_new=True)
    result = verify(answer, result_of(answer))
    assert result.ok and result.schema == "npu-hil-result/1.3"


@pytest.mark.slow
@pytest.mark.parametrize("schema", [None, "npu-hil-job/1", "result/1", 1])
def test_foreign_schema_is_refused(answer: BulkAnswer, schema: Any) -> None:
    result_of(answer)["schema"] = schema
    with pytest.raises(ProtocolError, match="expected 'npu-hil-result/1'"):
        verify(answer, result_of(answer))


@pytest.mark.slow
@pytest.mark.parametrize("digest", [False, True], ids=["buffer", "trailer"])
def test_an_answer_damaged_on_the_way_is_detected(answer: BulkAnswer, digest: bool) -> None:
    """A bit flipped in a device buffer, or in the trailer's digest of it, between the agent
    writing the frame and the host reading it."""
    wire = on_the_wire(answer)
    intact = read_back(wire)
    assert verify(intact, result_of(intact)).ok  # the frame as written reads back whole
    wire[offset_of(wire, 2, SIZES, digest=digest) + 17] ^= 0x40
    damaged = read_back(wire)
    with pytest.raises(
        TransportError, match=r"out_0\.bin: sha256 [0-9a-f]{64}, the agent wrote [0-9a-f]{64}"
    ):
        verify(damaged, result_of(damaged))


@pytest.mark.slow
def test_a_buffer_shorter_than_its_record_is_detected(answer: BulkAnswer) -> None:
    """A frame whose second buffer holds a byte less than its record says (its digest that of
    the bytes it holds, as a sender's would be)."""
    short = answer.buffers[1][:-1]
    answer.buffers[1] = short
    answer.ours[1] = answer.theirs[1] = hashlib.sha256(short).hexdigest()
    with pytest.raises(TransportError, match=r"in_1\.bin: 319 bytes came, the record says 320"):
        verify(answer, result_of(answer))


@pytest.mark.slow
def test_a_missing_buffer_is_detected(answer: BulkAnswer) -> None:
    document = result_of(answer)
    for parts in (answer.buffers, answer.ours, answer.theirs):
        del parts[-1]
    with pytest.raises(TransportError, match="carries 3 buffers for 4 records"):
        verify(answer, document)
    # A plain frame (no buffers at all) for a result that describes some.
    with pytest.raises(TransportError, match="carries 0 buffers for 4 records"):
        verify(None, document)


@pytest.mark.slow
def test_a_cut_answer_is_never_read_as_a_result(answer: BulkAnswer) -> None:
    """The stream ends inside the answer's frame (in its header, message, a buffer, the
    trailer): the reader says the session ended, never hands back part of a result."""
    wire = on_the_wire(answer)
    message_end = board.FRAME_HEADER.size + board.BULK_PREFIX.size + 100
    cuts = [3, message_end, offset_of(wire, 3, SIZES) + 1, len(wire) - 1]
    for cut in cuts:
        with pytest.raises(StreamEnded):
            read_back(wire[:cut])
    assert read_back(wire).buffers == answer.buffers


class DamagingTransport(LocalTransport):
    """A transport that hands a one-shot agent's stdout to ``damage`` on its way back, once
    ``armed`` (the model is sent before it is)."""

    def __init__(self, workdir: Path, damage: Callable[[bytes], bytes]) -> None:
        super().__init__(workdir)
        self.damage = damage
        self.armed = False

    def run(
        self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None
    ) -> CompletedRun:
        done = super().run(argv, timeout=timeout, stdin=stdin)
        if "--serve" not in argv or not self.armed:
            return done
        assert done.returncode == 0
        return CompletedRun(done.returncode, self.damage(done.stdout), done.stderr, done.duration)


def garbled(stdout: bytes) -> bytes:
    """The answer's message with its first byte damaged: a whole frame that holds no JSON."""
    header = board.FRAME_HEADER.size
    answer = header + board.frame_length(stdout[:header])
    assert board.is_bulk(stdout[answer : answer + header])
    damaged = bytearray(stdout)
    damaged[answer + header + board.BULK_PREFIX.size] = 0xFF
    return bytes(damaged)


@pytest.mark.slow
def test_a_garbled_answer_is_a_transport_error(tmp_path: Path, model: Path) -> None:
    """The client's one-shot path: an answer whose result document cannot be read is a
    damaged stream (infrastructure), not a result."""
    transport = DamagingTransport(tmp_path / "board", garbled)
    client = AgentClient(transport, resident=False, adapter_dirs=[FAKE_ADAPTERS], margin_s=5)
    client.deploy_model(model)
    transport.armed = True
    with client, pytest.raises(TransportError, match="stream is corrupted"):
        client.submit(echo_job(model), echo_inputs())


@pytest.mark.slow
def test_a_cut_one_shot_answer_is_a_transport_error(tmp_path: Path, model: Path) -> None:
    """An agent that answered and exited 0, whose answer did not arrive whole: the link lost
    it (infrastructure, retried), not the board (a DeviceError)."""
    transport = DamagingTransport(tmp_path / "board", lambda stdout: stdout[: len(stdout) // 2])
    client = AgentClient(transport, resident=False, adapter_dirs=[FAKE_ADAPTERS], margin_s=5)
    client.deploy_model(model)
    transport.armed = True
    with client, pytest.raises(TransportError, match="came cut short") as caught:
        client.submit(echo_job(model), echo_inputs())
    assert not isinstance(caught.value, DeviceError)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["../job.json", "/etc/passwd", "a/../../b", "a\\b", "a\x00b"])
def test_result_naming_files_outside_the_kept_folder_is_refused(
    answer: BulkAnswer, name: str
) -> None:
    """A buffer's name is written on the board as a kept job's file: it must be a plain name."""
    document = result_of(answer)
    document["outputs"][0]["file"] = name
    with pytest.raises(ProtocolError, match="leaves the job's folder"):
        result_records(document)
    with pytest.raises(ProtocolError, match=r"outputs\[0\]\.file"):
        verify(answer, document)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["in_0.bin", "job.json", "result.json"])
def test_result_naming_a_file_twice_is_refused(answer: BulkAnswer, name: str) -> None:
    document = result_of(answer)
    document["outputs"][1]["file"] = name
    with pytest.raises(ProtocolError, match=rf"outputs\[1\]\.file: '{name}' is used twice"):
        verify(answer, document)


@pytest.mark.slow
def test_result_of_another_job_is_refused(answer: BulkAnswer) -> None:
    with pytest.raises(ProtocolError, match="result of job 'job-1', expected job 'job-2'"):
        verify(answer, result_of(answer), job_id="job-2")
    assert verify(answer, result_of(answer), job_id="job-1").ok


@pytest.mark.slow
def test_inconsistent_ok_flag_is_refused(answer: BulkAnswer) -> None:
    result_of(answer)["ok"] = False
    with pytest.raises(ProtocolError, match="ok is False with 0 error records"):
        verify(answer, result_of(answer))


# --- the host refuses to send a job it knows is wrong --------------------------------------------


def test_frame_job_checks_arrays(model: Path) -> None:
    spec = echo_job(model)
    good = echo_inputs()
    cached = ModelRef(f"{'0' * 64}/model.rknn", "0" * 64)
    document, buffers = frame_job(spec, good, cached)
    assert [b.nbytes for b in buffers] == [i["nbytes"] for i in document["inputs"]] == [240, 320]
    with pytest.raises(LayoutError, match=r"expected float32 \(1, 3, 4, 5\), got float64"):
        frame_job(spec, {**good, "images": good["images"].astype(np.float64)}, cached)
    with pytest.raises(LayoutError, match="packed device buffer"):
        frame_job(spec, {**good, "packed": good["images"]}, cached)
    with pytest.raises(LayoutError, match=r"no array for \['packed'\]"):
        frame_job(spec, {"images": good["images"]}, cached)
    with pytest.raises(LayoutError, match=r"\['extra'\] are not inputs of job 'job-1'"):
        frame_job(spec, {**good, "extra": good["images"]}, cached)
    with pytest.raises(LayoutError, match="has 2 inputs, got 1 arrays"):
        frame_job(spec, [good["images"]], cached)


def test_frames_round_trip() -> None:
    message = {"op": "job", "job_id": "x", "value": np.int64(3)}
    frame = board.encode_frame(message)
    assert frame[:8] == len(frame[8:]).to_bytes(8, "big")
    assert board.frame_length(frame[:8]) == len(frame) - 8
    assert not board.is_bulk(frame[:8])
    assert board.decode_frame(frame[8:]) == {"op": "job", "job_id": "x", "value": 3}
    with pytest.raises(ValueError, match="not npu-hil frames"):
        board.frame_length(b"Hello, w")
