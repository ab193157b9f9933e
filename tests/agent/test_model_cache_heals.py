"""A model whose copy in the board's cache no longer hashes to its name is the cache's damage,
not the board's: the client copies it again and reruns the job once, the job passes, and the
event is there to report. Both ways a job reaches an agent: a session and a one-shot agent; a
fresh agent each time (a resident one keeps the loaded model and never rereads the file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from npu_hil.harness.agent.client import CACHE_DIR, AgentClient
from npu_hil.harness.transport import LocalTransport
from tests.agent.jobs import FAKE_ADAPTERS, X, echo_job
from tests.agent.test_resident_agent import PY


def _client(board: Path, **options: object) -> AgentClient:
    transport = LocalTransport(board, python=PY)
    return AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS], **options)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("resident", [True, False], ids=["resident", "one-shot"])
def test_a_damaged_cached_model_is_copied_again(tmp_path: Path, resident: bool) -> None:
    model = tmp_path / "echo.bin"
    model.write_bytes(b"model" * 40)
    board = tmp_path / "board"
    with _client(board, resident=resident) as first:
        assert first.submit(echo_job(model, "first"), {"x": X}).ok
        assert first.take_events() == []
    (cached,) = (board / CACHE_DIR).glob("*/echo.bin")
    damaged = bytearray(cached.read_bytes())
    damaged[7] ^= 0x01  # one flipped bit
    cached.write_bytes(damaged)
    with _client(board, resident=resident) as second:
        result = second.submit(echo_job(model, "second"), {"x": X})
        assert result.ok, result.errors
        (event,) = second.take_events()
        assert "did not hash to its name; copied again" in event and cached.parent.name in event
        assert second.take_events() == []  # reported once
    assert cached.read_bytes() == model.read_bytes()
