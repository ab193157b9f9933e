"""Jobs carried in frames: the same result from a session as from a one-shot agent, every buffer
checked on arrival both ways, a kept job's files on the board, and a bad frame refused without
losing the stream.

A job is one frame each way, on a session (the default) and to a one-shot agent alike; these tests
hold the two to the same results and guarantees (size and sha256 end to end, typed errors, no job
folder on the board), and the agent to its bounds when a client speaks bulk frames directly.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.agent import client as client_module
from npu_hil.harness.agent import protocol
from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.agent.protocol import InputSpec, JobSpec, ModelRef, frame_job
from npu_hil.harness.board import wire as board
from npu_hil.harness.board.frames import BULK_FLAG, FRAME_HEADER
from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport import LocalTransport
from tests.agent.jobs import FAKE_ADAPTERS, RawSession, X, echo_job, sim_job
from tests.agent.test_resident_agent import PY

# Three inputs of three element types: each buffer must land at its own offset of the frame.
MULTI = (
    InputSpec("x", "NCHW", (2, 3, 4, 4), "int8"),
    InputSpec("y", "NC", (5, 7), "float32"),
    InputSpec("z", "N", (3,), "uint16"),
)
MULTI_ARRAYS = {
    "x": X,
    "y": np.linspace(-1, 1, 35, dtype=np.float32).reshape(5, 7),
    "z": np.array([1, 65535, 2], dtype=np.uint16),
}


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "echo.bin"
    path.write_bytes(b"model" * 40)
    return path


def client_for(tmp_path: Path, name: str, **options: object) -> AgentClient:
    transport = LocalTransport(tmp_path / name, python=PY)
    return AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS], **options)  # type: ignore[arg-type]


def comparable(document: dict[str, object]) -> dict[str, object]:
    """A result document without what differs between two runs of the same job."""
    kept = {k: v for k, v in document.items() if k not in ("timings", "board_log", "board_state")}
    return json.loads(json.dumps(kept))


@pytest.mark.slow
def test_a_session_job_matches_a_one_shot_job(tmp_path: Path, model: Path) -> None:
    """The same job through a session and through a one-shot agent (its request on the
    process's stdin, its answer on its stdout): the same result document but for the run's own
    readings, the same buffers, and neither leaves a job folder on the board."""
    job = echo_job(model, "same", inputs=MULTI)
    with (
        client_for(tmp_path, "resident") as session_client,
        client_for(tmp_path, "one-shot", resident=False) as one_shot_client,
    ):
        by_session = session_client.submit(job, MULTI_ARRAYS)
        by_one_shot = one_shot_client.submit(job, MULTI_ARRAYS)
        assert (session_client.agents_started, one_shot_client.agents_started) == (1, 0)
        for c in (session_client, one_shot_client):
            assert not (Path(c.transport.workdir) / "jobs").exists()
    assert by_session.ok and by_one_shot.ok
    assert comparable(dict(by_session.document)) == comparable(dict(by_one_shot.document))
    for name, array in MULTI_ARRAYS.items():
        for result in (by_session, by_one_shot):
            got = result.output(f"{name}_out")
            assert got.data.tobytes() == array.tobytes()
            assert got.sha256 == hashlib.sha256(array.tobytes()).hexdigest()


@pytest.mark.slow
def test_a_resident_sim_job_matches_a_one_shot_job(tmp_path: Path) -> None:
    """The simulated NPU through a resident agent and a one-shot one: the same device buffers
    both ways and the same runtime attributes (layouts, quantization) for each."""
    spec, inputs = sim_job(tmp_path, "sim-framed", "rk3588")
    results = {}
    for resident in (True, False):
        transport = LocalTransport(tmp_path / f"board-{resident}", python=PY)
        with AgentClient(transport, resident=resident) as c:
            results[resident] = c.submit(spec, inputs)
    by_session, by_one_shot = results[True], results[False]
    assert by_session.ok, by_session.errors
    assert by_one_shot.ok, by_one_shot.errors
    for kind in ("inputs", "outputs"):
        mine, theirs = getattr(by_session, kind), getattr(by_one_shot, kind)
        assert len(mine) == len(theirs) > 0
        assert [t.data.tobytes() for t in mine] == [t.data.tobytes() for t in theirs]
        assert [dict(t.attributes) for t in mine] == [dict(t.attributes) for t in theirs]


@pytest.mark.slow
def test_an_answer_damaged_on_the_way_is_caught(
    tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = protocol.recv_buffer
    calls: list[int] = []

    def damaging(session: object, n: int, deadline: float) -> tuple[bytearray, str]:
        data, digest = real(session, n, deadline)  # type: ignore[arg-type]
        calls.append(n)
        if len(calls) == 2:  # the answer's second buffer, the output: damaged after it came
            data[-1] ^= 0x01
            return data, hashlib.sha256(data).hexdigest()
        return data, digest

    monkeypatch.setattr(protocol, "recv_buffer", damaging)
    with (
        client_for(tmp_path, "board") as c,
        pytest.raises(TransportError, match=r"out_0\.bin: sha256 [0-9a-f]+, the agent wrote"),
    ):
        c.submit(echo_job(model), {"x": X})


@pytest.mark.slow
def test_a_request_damaged_on_the_way_is_refused_by_the_agent(
    tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = client_module.bulk_request

    def damaging(message: dict[str, object], buffers: list[memoryview]) -> Iterator[bytes]:
        pieces = list(real(message, buffers))  # type: ignore[arg-type]
        damaged = bytearray(pieces[-2])  # the input's last piece; the trailer comes after it
        damaged[-1] ^= 0x01
        pieces[-2] = bytes(damaged)
        yield from pieces

    with client_for(tmp_path, "board") as c:
        c.deploy_model(model)  # the model arrives whole; the job's input does not
        monkeypatch.setattr(client_module, "bulk_request", damaging)
        result = c.submit(echo_job(model), {"x": X})
    assert not result.ok
    (record,) = result.errors
    assert (record.type, record.field) == ("JobError", "inputs[0].sha256")
    assert record.reason == "checksum"
    # A damaged transfer: infrastructure, retried by the plugin, never a product failure.
    assert isinstance(result.error(), TransportError)


@pytest.mark.slow
def test_a_kept_job_leaves_its_files_on_the_board(tmp_path: Path, model: Path) -> None:
    with client_for(tmp_path, "kept", keep_jobs=True) as c:
        result = c.submit(echo_job(model, "kept"), {"x": X})
        assert result.ok
        (kept,) = (Path(c.transport.workdir) / "jobs").iterdir()
    # The job's files, written by the agent after it ran: its document naming its input files,
    # the inputs, the device buffers and the result.
    assert kept.name.startswith("kept-")
    document = json.loads((kept / "job.json").read_text())
    assert document["job_id"] == "kept" and document["inputs"][0]["file"] == "input_0.bin"
    assert (kept / "input_0.bin").read_bytes() == X.tobytes()
    answered = json.loads((kept / "result.json").read_text())
    assert answered["ok"] and answered["job_id"] == "kept"
    out = answered["outputs"][0]
    assert (kept / out["file"]).read_bytes() == result.output(out["name"]).data.tobytes()
    assert (kept / out["file"]).read_bytes() == X.tobytes()
    with client_for(tmp_path, "framed") as c:
        assert c.submit(echo_job(model, "framed"), {"x": X}).ok
        assert list((Path(c.transport.workdir) / "jobs").glob("*")) == []


@pytest.mark.slow
@pytest.mark.parametrize("resident", [True, False], ids=["resident", "one-shot"])
def test_inputs_of_any_size_go_as_frames(tmp_path: Path, model: Path, resident: bool) -> None:
    """Past the agent's in-memory bound (its buffers then land in unlinked files): still one
    frame each way, on a session and one-shot, and no file of it left on the board."""
    big = np.random.default_rng(5).integers(-128, 128, (1, 1, 4099, 4099), dtype=np.int8)
    spec = echo_job(model, "big", inputs=(InputSpec("x", "NCHW", big.shape, "int8"),))
    with client_for(tmp_path, "board", resident=resident) as c:
        result = c.submit(spec, {"x": big})
        assert result.ok, result
        assert result.output("x_out").data.tobytes() == big.tobytes()
        assert list((Path(c.transport.workdir) / "jobs").glob("*")) == []
        assert c.agents_started == (1 if resident else 0)


# --- bulk frames spoken directly ------------------------------------------------------------------


def bulk(message: dict[str, object], data: bytes) -> bytes:
    return b"".join(board.encode_bulk_frame(message, [memoryview(data)]))


def framed_request(model_sha: str, nbytes: int) -> dict[str, object]:
    return {
        "op": "job",
        "job": {
            "schema": board.JOB_SCHEMA,
            "job_id": "raw",
            "model": {"path": f"{model_sha}/m.bin", "sha256": model_sha},
            "adapter": "echo",
            "inputs": [
                {"name": "x", "layout": "N", "shape": [4], "dtype": "int8", "nbytes": nbytes},
            ],
        },
    }


@pytest.mark.slow
def test_a_bulk_frame_that_carries_other_sizes_than_it_announces_is_refused(
    tmp_path: Path,
) -> None:
    raw = RawSession(tmp_path)
    raw.read()
    data = b"\x01\x02\x03\x04\x05"  # five bytes, the input announces four
    raw.send_bytes(bulk(framed_request("0" * 64, 4), data))
    answer = raw.read()
    assert answer["op"] == "job"
    (error,) = answer["result"]["errors"]
    assert error["reason"] in ("size", "missing")
    # The stream is still in step: the next request is answered.
    raw.send({"op": "ping"})
    assert raw.read()["op"] == "ping"
    raw.send({"op": "shutdown"})
    raw.read()
    assert raw.finish()[0] == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "keep", ["/tmp/x", "jobs/../escape", "jobs/a/b", "jobs/", "elsewhere/x", "jobs/taken", 7]
)
def test_a_kept_folder_outside_jobs_or_taken_is_refused(tmp_path: Path, keep: object) -> None:
    """A request's ``keep`` names a new folder directly under jobs/ and nothing else: the agent
    refuses any other before the job runs, writes nothing, and the session goes on."""
    (tmp_path / "jobs" / "taken").mkdir(parents=True, mode=0o700)
    raw = RawSession(tmp_path)
    raw.read()
    raw.send_bytes(bulk({**framed_request("0" * 64, 4), "keep": keep}, b"\x01\x02\x03\x04"))
    answer = raw.read()
    assert answer["op"] == "job" and answer["error"]["field"] == "keep"
    assert "result" not in answer
    raw.send({"op": "ping"})
    assert raw.read()["jobs"] == 0  # the job never ran
    raw.send({"op": "shutdown"})
    raw.read()
    assert raw.finish()[0] == 0
    assert [p.name for p in (tmp_path / "jobs").iterdir()] == ["taken"]
    assert list((tmp_path / "jobs" / "taken").iterdir()) == []
    assert not (tmp_path / "escape").exists() and not (tmp_path / "elsewhere").exists()


@pytest.mark.slow
def test_a_bulk_frame_whose_message_is_not_json_is_answered_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    raw = RawSession(tmp_path)
    raw.read()
    message = b"{not json"
    payload = struct.pack(">I", len(message)) + message + b"buffers"
    # (A message that cannot be read names no buffers: the rest of the frame is skipped.)
    raw.send_bytes(FRAME_HEADER.pack(len(payload) | BULK_FLAG) + payload)
    answer = raw.read()
    assert answer["op"] == "error" and answer["error"]["type"] == "ProtocolError"
    raw.send({"op": "ping"})
    assert raw.read()["op"] == "ping"
    raw.send({"op": "shutdown"})
    raw.read()
    assert raw.finish()[0] == 0


@pytest.mark.slow
def test_a_bulk_frame_past_the_cap_is_refused_unread(tmp_path: Path) -> None:
    raw = RawSession(tmp_path)
    raw.read()
    # 3 GiB announced (under the stream's own cap, over a job's inputs): nothing is buffered.
    raw.send_bytes(FRAME_HEADER.pack((3 << 30) | BULK_FLAG))
    answer = raw.read()
    assert answer["op"] == "error" and "bulk request frame" in answer["error"]["message"]
    assert raw.finish()[0] == board.EXIT_FAILED


def test_framed_jobs_run_on_the_oldest_board_python(tmp_path: Path, model: Path) -> None:
    from tests.agent.jobs import PY38, py38_problem

    problem = py38_problem()
    if problem is not None:
        pytest.skip(problem)
    transport = LocalTransport(tmp_path / "board38", python=PY38)
    with AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS]) as c:
        result = c.submit(echo_job(model, "py38", inputs=MULTI), MULTI_ARRAYS)
        assert "framed-jobs" in c.hello["features"]
    assert result.ok, result.errors
    assert result.output("y_out").data.tobytes() == MULTI_ARRAYS["y"].tobytes()
    assert not (Path(transport.workdir) / "jobs").exists()


def test_a_job_spec_is_framed_with_its_digests_last(model: Path) -> None:
    """The job document gives the sizes; the frame's trailer the sha256 of each buffer."""
    document, buffers = frame_job(
        JobSpec("j", "echo", model, MULTI), MULTI_ARRAYS, ModelRef("m", "0" * 64)
    )
    assert [b.nbytes for b in buffers] == [a.nbytes for a in MULTI_ARRAYS.values()]
    for record, array in zip(document["inputs"], MULTI_ARRAYS.values(), strict=True):
        assert "file" not in record and "sha256" not in record  # the frame's trailer has it
        assert record["nbytes"] == array.nbytes
    frame = b"".join(board.encode_bulk_frame({"op": "job", "job": document}, buffers))
    digests = frame[-32 * len(buffers) :]
    for index, array in enumerate(MULTI_ARRAYS.values()):
        assert digests[32 * index : 32 * (index + 1)] == hashlib.sha256(array.tobytes()).digest()
