"""The canary on the board side, run as a board runs the agent (the board package as a folder,
a one-shot ``--serve`` with one job's bulk frame on its stdin, under Python 3.8 and the current
Python): the job document's pattern validated, the adapter's hook asked before the run, and the
answer's result saying what was filled — or why nothing was."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.agent.client import HOST_ADAPTERS
from npu_hil.harness.board.job import canary_for
from npu_hil.harness.board.wire import EXIT_OK, EXIT_REFUSED
from tests.agent.jobs import PY38, X, echo_job, py38_problem, run_once, sim_job

PYTHONS = ["current", "py38"]


def python(which: str) -> str:
    if which == "py38":
        problem = py38_problem()
        if problem:
            pytest.skip(problem)
        return PY38
    return sys.executable


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.bin"
    path.write_bytes(b"model" * 20)
    return path


@pytest.mark.parametrize("which", PYTHONS)
def test_an_adapter_without_the_hook_fills_nothing_and_says_why(
    which: str, model: Path, tmp_path: Path
) -> None:
    pattern = canary_for("canary-job")
    spec = echo_job(model, "canary-job", canary=pattern)
    shot = run_once(tmp_path / "board", spec, {"x": X}, python=python(which))
    assert shot.status == EXIT_OK, shot.stderr
    result = shot.result(job_id="canary-job")
    assert result.ok and result.canary is not None
    assert result.canary.pattern == pattern
    assert not result.canary.outputs and not result.canary.inputs
    assert "echo" in result.canary.reason
    assert all(t.canary is None for t in result.inputs + result.outputs)


@pytest.mark.slow
@pytest.mark.parametrize("which", PYTHONS)
def test_a_job_without_a_canary_has_no_canary_section(
    which: str, model: Path, tmp_path: Path
) -> None:
    shot = run_once(tmp_path / "board", echo_job(model), {"x": X}, python=python(which))
    assert shot.status == EXIT_OK, shot.stderr
    result = shot.result()
    assert result.ok and result.canary is None and "canary" not in result.document


@pytest.mark.parametrize("which", PYTHONS)
@pytest.mark.parametrize("bad", ["a5a5a5a5", "00", "not hex", 12])
def test_a_canary_that_is_no_pattern_is_refused(
    which: str, bad: object, model: Path, tmp_path: Path
) -> None:
    def with_bad_canary(document: dict[str, Any]) -> dict[str, Any]:
        return {**document, "canary": bad}

    workdir = tmp_path / "board"
    shot = run_once(workdir, echo_job(model), {"x": X}, python=python(which), edit=with_bad_canary)
    assert shot.status == EXIT_REFUSED, shot.stderr
    assert shot.response is not None and not shot.response["result"]["ok"]
    (error,) = shot.errors
    assert error["type"] == "JobError" and error["field"] == "canary"


@pytest.mark.slow
def test_the_simulated_runtime_fills_and_writes_over_the_pattern(tmp_path: Path) -> None:
    """The sim adapter behind the agent: filled, and a fault's unwritten tail holds the pattern."""
    spec, arrays = sim_job(tmp_path, "sim-canary", "rk3588")
    pattern = canary_for("sim-canary")
    faults = [{"name": "unwritten-output", "drop": 64}]
    options = {**spec.adapter_options, "faults": faults}
    spec = type(spec)(**{**spec.__dict__, "canary": pattern, "adapter_options": options})
    shot = run_once(
        tmp_path / "board",
        spec,
        arrays,
        "--adapters",
        str(HOST_ADAPTERS),
        adapters=False,
        timeout=120,
    )
    assert shot.status == EXIT_OK, shot.stderr
    result = shot.result(job_id="sim-canary")
    assert result.ok and result.canary is not None and result.canary.outputs
    (out,) = result.outputs
    assert out.canary == pattern
    tail = np.resize(np.frombuffer(pattern, np.uint8), out.data.size)[-64:]
    assert out.data[-64:].tobytes() == tail.tobytes()
