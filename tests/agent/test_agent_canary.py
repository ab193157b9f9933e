"""The canary on the board side, run as a board runs the agent (the board package as a folder,
one-shot, under Python 3.8 and the current Python): job.json's pattern validated, the adapter's
hook asked before the run, and result.json saying what was filled — or why nothing was."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.agent.client import HOST_ADAPTERS
from npu_hil.harness.agent.protocol import read_result, write_job
from npu_hil.harness.board.job import canary_for
from tests.agent.jobs import (
    BOARD_PACKAGE,
    FAKE_ADAPTERS,
    PY38,
    X,
    echo_job,
    py38_problem,
    sim_job,
)

PYTHONS = ["current", "py38"]


def python(which: str) -> str:
    if which == "py38":
        problem = py38_problem()
        if problem:
            pytest.skip(problem)
        return PY38
    return sys.executable


def run_agent(which: str, job_dir: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [python(which), str(BOARD_PACKAGE), str(job_dir), "--adapters", str(FAKE_ADAPTERS)],
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.bin"
    path.write_bytes(b"model" * 20)
    return path


@pytest.mark.parametrize("which", PYTHONS)
def test_an_adapter_without_the_hook_fills_nothing_and_says_why(
    which: str, model: Path, tmp_path: Path
) -> None:
    job_dir = tmp_path / "job"
    pattern = canary_for("canary-job")
    write_job(job_dir, echo_job(model, "canary-job", canary=pattern), {"x": X})
    done = run_agent(which, job_dir)
    assert done.returncode == 0, done.stderr.decode()
    result = read_result(job_dir, job_id="canary-job")
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
    write_job(tmp_path, echo_job(model), {"x": X})
    assert run_agent(which, tmp_path).returncode == 0
    result = read_result(tmp_path)
    assert result.ok and result.canary is None and "canary" not in result.document


@pytest.mark.parametrize("which", PYTHONS)
@pytest.mark.parametrize("bad", ["a5a5a5a5", "00", "not hex", 12])
def test_a_canary_that_is_no_pattern_is_refused(
    which: str, bad: object, model: Path, tmp_path: Path
) -> None:
    write_job(tmp_path, echo_job(model), {"x": X})
    doc = json.loads((tmp_path / "job.json").read_text())
    doc["canary"] = bad
    (tmp_path / "job.json").write_text(json.dumps(doc))
    done = run_agent(which, tmp_path)
    assert done.returncode == 2, done.stderr.decode()
    result = json.loads((tmp_path / "result.json").read_text())
    (error,) = result["errors"]
    assert error["type"] == "JobError" and error["field"] == "canary"


@pytest.mark.slow
def test_the_simulated_runtime_fills_and_writes_over_the_pattern(tmp_path: Path) -> None:
    """The sim adapter behind the agent: filled, and a fault's unwritten tail holds the pattern."""
    spec, arrays = sim_job(tmp_path, "sim-canary", "rk3588")
    pattern = canary_for("sim-canary")
    faults = [{"name": "unwritten-output", "drop": 64}]
    options = {**spec.adapter_options, "faults": faults}
    spec = type(spec)(**{**spec.__dict__, "canary": pattern, "adapter_options": options})
    job_dir = tmp_path / "job"
    write_job(job_dir, spec, arrays)
    done = subprocess.run(
        [sys.executable, str(BOARD_PACKAGE), str(job_dir), "--adapters", str(HOST_ADAPTERS)],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    result = read_result(job_dir)
    assert result.ok and result.canary is not None and result.canary.outputs
    (out,) = result.outputs
    assert out.canary == pattern
    tail = np.resize(np.frombuffer(pattern, np.uint8), out.data.size)[-64:]
    assert out.data[-64:].tobytes() == tail.tobytes()
