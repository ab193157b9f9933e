"""A model reaches the board's cache in the agent's stream, as a job does: in chunks, each checked
by its sha256, resumed where a cut left it, sent again when it arrives damaged, and filed under
its name only once the whole hashes to the sha256 it is filed by.

The board's half (:mod:`npu_hil.harness.board.modelstore`) is held first on its own, request by
request; then a real agent process takes models from the host's client, resident and one-shot.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from npu_hil.harness.agent import client as client_module
from npu_hil.harness.agent.client import CACHE_DIR, CHUNK_TRIES, AgentClient, Answered, Outgoing
from npu_hil.harness.board.modelstore import MAX_MODEL_BYTES, answer_model
from npu_hil.harness.errors import ProtocolError, TransportError
from npu_hil.harness.transport import LocalTransport
from tests.agent.jobs import FAKE_ADAPTERS, X, echo_job
from tests.agent.test_resident_agent import PY

MODEL = bytes(range(256)) * 21 + b"tail"  # 5,380 bytes: six chunks of 1,000 and a short one
SHA = hashlib.sha256(MODEL).hexdigest()


def ask(root: Path, **fields: object) -> dict[str, object]:
    return answer_model(
        str(root), {"op": "model", "sha256": SHA, "name": "m.rknn", **fields}, None, ()
    )


def chunk(root: Path, offset: int, data: bytes, damaged: bool = False) -> dict[str, object]:
    request = {"op": "model", "sha256": SHA, "name": "m.rknn", "size": len(MODEL), "offset": offset}
    return answer_model(str(root), request, [bytearray(data)], (0,) if damaged else ())


# --- the board's half, request by request -------------------------------------------------------


def test_chunks_in_order_become_the_model_only_when_whole(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    assert ask(root, size=len(MODEL)) == {"op": "model", "have": 0}
    final = root / SHA / "m.rknn"
    for offset in range(0, len(MODEL), 1000):
        answer = chunk(root, offset, MODEL[offset : offset + 1000])
        assert answer == {"op": "model", "have": min(offset + 1000, len(MODEL))}
        # A job never meets half a model.
        assert final.exists() == (offset + 1000 >= len(MODEL))
    assert final.read_bytes() == MODEL
    assert [p.name for p in (root / SHA).iterdir()] == ["m.rknn"]  # the part is gone
    # Nothing another user can write into.
    assert (root.stat().st_mode & 0o777, (root / SHA).stat().st_mode & 0o777) == (0o700, 0o700)
    assert ask(root, size=len(MODEL)) == {"op": "model", "have": len(MODEL)}


def test_a_chunk_sent_twice_or_out_of_place_is_not_written(tmp_path: Path) -> None:
    """An answer lost on the way makes the host send a chunk again: the board answers what it
    holds and writes nothing twice; a chunk past the part's end is not written either."""
    root = tmp_path / "cache"
    assert chunk(root, 0, MODEL[:1000])["have"] == 1000
    assert chunk(root, 0, MODEL[:1000])["have"] == 1000
    assert chunk(root, 2000, MODEL[2000:3000])["have"] == 1000
    assert (root / SHA / ".m.rknn.part").read_bytes() == MODEL[:1000]


def test_a_damaged_chunk_is_not_written_and_is_asked_for_again(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    chunk(root, 0, MODEL[:1000])
    answer = chunk(root, 1000, b"\xff" * 1000, damaged=True)
    assert answer == {"op": "model", "have": 1000, "damaged": True}
    assert (root / SHA / ".m.rknn.part").stat().st_size == 1000


def test_a_cut_transfer_resumes_where_it_stopped(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    chunk(root, 0, MODEL[:3000])
    assert ask(root, size=len(MODEL)) == {"op": "model", "have": 3000}


def test_bytes_that_do_not_hash_to_the_name_are_dropped(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    wrong = bytearray(MODEL)
    wrong[7] ^= 0x01
    answer = chunk(root, 0, bytes(wrong))
    error = answer["error"]
    assert isinstance(error, dict)
    assert (error["type"], error["field"], error["reason"]) == ("JobError", "sha256", "checksum")
    assert f"hash to {hashlib.sha256(wrong).hexdigest()}, not {SHA}" in error["message"]
    assert list((root / SHA).iterdir()) == []  # nothing kept, the next try starts at 0
    assert ask(root, size=len(MODEL))["have"] == 0


def test_a_cached_file_of_another_size_or_a_replace_starts_afresh(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    (root / SHA).mkdir(parents=True, mode=0o700)
    os.chmod(root, 0o700)
    (root / SHA / "m.rknn").write_bytes(MODEL[:10])  # a torn copy of another time
    assert ask(root, size=len(MODEL))["have"] == 0
    assert not (root / SHA / "m.rknn").exists()
    (root / SHA / "m.rknn").write_bytes(MODEL)
    assert ask(root, size=len(MODEL), replace=True)["have"] == 0
    assert not (root / SHA / "m.rknn").exists()


def test_a_model_of_no_bytes_is_filed_at_once(tmp_path: Path) -> None:
    empty = hashlib.sha256(b"").hexdigest()
    request = {"op": "model", "sha256": empty, "name": "none.bin", "size": 0}
    assert answer_model(str(tmp_path / "cache"), request, None, ()) == {"op": "model", "have": 0}
    assert (tmp_path / "cache" / empty / "none.bin").read_bytes() == b""


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"sha256": "ab" * 31, "size": 1}, "sha256"),
        ({"sha256": SHA.upper(), "size": 1}, "sha256"),
        ({"name": "../m.rknn", "size": 1}, "name"),
        ({"name": ".hidden", "size": 1}, "name"),
        ({"name": "a/b", "size": 1}, "name"),
        ({"size": -1}, "size"),
        ({"size": MAX_MODEL_BYTES + 1}, "size"),
        ({"size": True}, "size"),
    ],
)
def test_a_request_naming_no_model_is_refused_with_its_field(
    tmp_path: Path, fields: dict[str, object], field: str
) -> None:
    request = {"op": "model", "sha256": SHA, "name": "m.rknn", **fields}
    error = answer_model(str(tmp_path / "cache"), request, None, ())["error"]
    assert isinstance(error, dict) and (error["type"], error["field"]) == ("JobError", field)
    assert not (tmp_path / "cache").exists()  # nothing was written anywhere


def test_a_chunk_running_past_the_model_is_refused(tmp_path: Path) -> None:
    error = chunk(tmp_path / "cache", 0, MODEL + b"more")["error"]
    assert isinstance(error, dict) and (error["field"], error["reason"]) == ("offset", "range")


def test_a_cache_another_user_can_write_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    os.chmod(root, 0o777)
    error = chunk(root, 0, MODEL[:1000])["error"]
    assert isinstance(error, dict) and error["reason"] == "folder"
    assert "writable by group or others" in str(error["message"])
    assert not (root / SHA / ".m.rknn.part").exists()


# --- a real agent process, fed by the host's client ---------------------------------------------


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.rknn"
    path.write_bytes(MODEL)
    return path


def small_chunks(board: Path, resident: bool = True) -> AgentClient:
    client = AgentClient(
        LocalTransport(board, python=PY), adapter_dirs=[FAKE_ADAPTERS], resident=resident
    )
    client.model_chunk_bytes = 1000
    return client


@pytest.mark.slow
@pytest.mark.parametrize("resident", [True, False], ids=["resident", "one-shot"])
def test_a_model_of_several_chunks_reaches_the_cache_whole(
    tmp_path: Path, model: Path, resident: bool
) -> None:
    board = tmp_path / "board"
    with small_chunks(board, resident) as client:
        assert client.submit(echo_job(model), {"x": X}).ok
        assert client.model_bytes_sent == len(MODEL)
    assert (board / CACHE_DIR / SHA / "m.rknn").read_bytes() == MODEL
    # Another client finds it there and sends nothing.
    with small_chunks(board, resident) as again:
        assert again.submit(echo_job(model, "again"), {"x": X}).ok
        assert again.model_bytes_sent == 0


@pytest.mark.slow
def test_a_cut_transfer_sends_only_the_rest(tmp_path: Path, model: Path) -> None:
    board = tmp_path / "board"
    part = board / CACHE_DIR / SHA / ".m.rknn.part"
    part.parent.mkdir(parents=True, mode=0o700)
    os.chmod(part.parent.parent, 0o700)
    part.write_bytes(MODEL[:2500])  # what reached the board before the link was cut
    with small_chunks(board) as client:
        assert client.submit(echo_job(model), {"x": X}).ok
        assert client.model_bytes_sent == len(MODEL) - 2500
    assert (board / CACHE_DIR / SHA / "m.rknn").read_bytes() == MODEL


def damage_model_chunks(monkeypatch: pytest.MonkeyPatch, how_many: int) -> list[int]:
    """Damage the first ``how_many`` model chunks on their way (a flipped bit in the chunk, after
    its sha256 was taken); the offsets of those damaged."""
    real = client_module.bulk_request
    damaged: list[int] = []

    def damaging(message: dict[str, object], buffers: list[memoryview]) -> Iterator[bytes]:
        pieces = list(real(message, buffers))
        if message["op"] == "model" and len(damaged) < how_many:
            damaged.append(int(message["offset"]))  # type: ignore[call-overload]
            piece = bytearray(pieces[-2])  # the chunk's last piece; the trailer comes after it
            piece[-1] ^= 0x01
            pieces[-2] = bytes(piece)
        yield from pieces

    monkeypatch.setattr(client_module, "bulk_request", damaging)
    return damaged


@pytest.mark.slow
def test_a_damaged_chunk_is_sent_again(
    tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    board = tmp_path / "board"
    with small_chunks(board) as client:
        client.deploy()
        damaged = damage_model_chunks(monkeypatch, CHUNK_TRIES - 1)
        with caplog.at_level(logging.WARNING):
            assert client.submit(echo_job(model), {"x": X}).ok
        assert damaged == [0, 0]  # the first chunk, twice in a row: the third try got through
        assert client.model_bytes_sent == len(MODEL) + 2 * 1000
    assert "the chunk at byte 0 arrived damaged; sent again" in caplog.text
    assert (board / CACHE_DIR / SHA / "m.rknn").read_bytes() == MODEL


@pytest.mark.slow
def test_a_chunk_damaged_every_time_gives_the_link_up(
    tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with small_chunks(tmp_path / "board") as client:
        client.deploy()
        damage_model_chunks(monkeypatch, CHUNK_TRIES)
        with pytest.raises(TransportError, match=rf"byte 0 did not arrive intact in {CHUNK_TRIES}"):
            client.deploy_model(model)


# --- a small model goes ahead of its job, in the same exchange ----------------------------------


def record_exchanges(client: AgentClient, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The ops of each exchange the client makes (an exchange: one relay run over a console)."""
    real = client._exchange_all
    exchanges: list[list[str]] = []

    def recording(requests: Sequence[Outgoing], timeout: float, what: str) -> list[Answered]:
        exchanges.append([str(r.message["op"]) for r in requests])
        return real(requests, timeout, what)

    monkeypatch.setattr(client, "_exchange_all", recording)
    return exchanges


@pytest.mark.slow
@pytest.mark.parametrize("resident", [True, False], ids=["resident", "one-shot"])
def test_a_small_model_travels_with_its_first_job(
    tmp_path: Path, model: Path, resident: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = tmp_path / "board"
    with AgentClient(
        LocalTransport(board, python=PY), adapter_dirs=[FAKE_ADAPTERS], resident=resident
    ) as client:
        client.deploy()
        exchanges = record_exchanges(client, monkeypatch)
        assert client.submit(echo_job(model), {"x": X}).ok
        assert client.submit(echo_job(model, "again"), {"x": X}).ok
        assert exchanges == [["model", "job"], ["job"]]
        assert client.model_bytes_sent == len(MODEL)
    assert (board / CACHE_DIR / SHA / "m.rknn").read_bytes() == MODEL


@pytest.mark.slow
def test_a_small_model_damaged_ahead_of_its_job_is_sent_again(
    tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    board = tmp_path / "board"
    with AgentClient(LocalTransport(board, python=PY), adapter_dirs=[FAKE_ADAPTERS]) as client:
        client.deploy()
        damaged = damage_model_chunks(monkeypatch, 1)
        exchanges = record_exchanges(client, monkeypatch)
        with caplog.at_level(logging.WARNING):
            result = client.submit(echo_job(model), {"x": X})
        assert result.ok, result.errors
        # Ahead of the job and damaged; then asked for, sent the checked way, and the job again.
        assert damaged == [0]
        assert exchanges == [["model", "job"], ["model"], ["model"], ["job"]]
    assert f"model {SHA}/m.rknn arrived damaged; sent again" in caplog.text
    assert (board / CACHE_DIR / SHA / "m.rknn").read_bytes() == MODEL


@pytest.mark.slow
def test_a_model_refused_ahead_of_its_job_is_the_error_and_the_stream_stays_in_step(
    tmp_path: Path, model: Path
) -> None:
    board = tmp_path / "board"
    with AgentClient(LocalTransport(board, python=PY), adapter_dirs=[FAKE_ADAPTERS]) as client:
        client.ping()
        (board / CACHE_DIR).mkdir(mode=0o777)
        os.chmod(board / CACHE_DIR, 0o777)  # another user could change what the board loads
        with pytest.raises(ProtocolError, match=rf"model {SHA}/m.rknn: .*writable by group"):
            client.submit(echo_job(model), {"x": X})
        pid = client.agent_pid
        os.chmod(board / CACHE_DIR, 0o700)
        assert client.submit(echo_job(model, "after"), {"x": X}).ok
        assert client.agent_pid == pid  # the same agent, its stream in step
