"""A framed job's input larger than what the agent keeps in memory streams into a file of its
jobs folder and is mapped back: the job gets the same bytes (the sha256 checked as they were
written), and nothing of it is left in the folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.agent.protocol import InputSpec
from npu_hil.harness.board.serve import IN_MEMORY_BYTES
from npu_hil.harness.transport import LocalTransport
from tests.agent.jobs import FAKE_ADAPTERS, echo_job
from tests.agent.test_resident_agent import PY


@pytest.mark.slow
def test_an_input_past_the_memory_bound_goes_through_a_file(tmp_path: Path) -> None:
    model = tmp_path / "echo.bin"
    model.write_bytes(b"model" * 40)
    size = IN_MEMORY_BYTES + 4099  # past the bound, and not a whole number of pages
    x = np.random.default_rng(3).integers(0, 256, (1, size), dtype=np.uint8)
    spec = echo_job(model, "big", inputs=(InputSpec("x", "NC", (1, size), "uint8"),))
    board = tmp_path / "board"
    with AgentClient(LocalTransport(board, python=PY), adapter_dirs=[FAKE_ADAPTERS]) as client:
        result = client.submit(spec, {"x": x})
        assert result.ok, result.errors
        (out,) = [t for t in result.outputs if t.name == "x_out"]
        assert np.array_equal(out.data.reshape(x.shape), x)
    assert not list((board / "jobs").glob(".bulk-*"))
