"""The agent on the oldest Python a board ships: 3.8 (from pyenv), with only numpy installed.

Skipped, with the reason, when that interpreter or its numpy is missing on this machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.agent.client import HOST_ADAPTERS, AgentClient
from npu_hil.harness.agent.protocol import InputSpec, JobSpec, read_result, write_job
from npu_hil.harness.board import wire as board
from npu_hil.harness.errors import DeviceError, TransportError
from npu_hil.harness.transport import LocalTransport
from tests.agent.jobs import BOARD_PACKAGE, FAKE_ADAPTERS, PY38, py38_problem

AGENT = BOARD_PACKAGE


PROBLEM = py38_problem()
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=PROBLEM or "")


@pytest.mark.parametrize(
    "source",
    [
        *sorted(AGENT.rglob("*.py")),
        FAKE_ADAPTERS / "echo.py",
        *sorted(HOST_ADAPTERS.glob("*.py")),
    ],
    ids=lambda p: p.relative_to(p.parents[1]).as_posix(),
)
def test_board_files_compile_under_38(source: Path) -> None:
    done = subprocess.run(
        [PY38, "-c", "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')", source],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.hbm"
    path.write_bytes(b"horizon-ish" * 33)
    return path


def job(model: Path, job_id: str = "py38", **options: object) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        adapter="echo",
        model=model,
        inputs=(
            InputSpec("img", "NHWC", (1, 5, 7, 3), "uint8"),
            InputSpec("aux", "NCHW", (1, 2, 2, 2), "float16"),
        ),
        adapter_options=options,
        load_timeout_s=10,
        run_timeout_s=10,
    )


INPUTS = {
    "img": np.arange(105, dtype=np.uint8).reshape(1, 5, 7, 3),
    "aux": np.linspace(-1, 1, 8, dtype=np.float16).reshape(1, 2, 2, 2),
}


def run_one_shot(python: str, job_dir: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [python, str(AGENT), str(job_dir), "--adapters", str(FAKE_ADAPTERS)],
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_one_shot_under_38_matches_current_python(tmp_path: Path, model: Path) -> None:
    results = {}
    for name, python in (("py38", PY38), ("current", sys.executable)):
        job_dir = tmp_path / name
        write_job(job_dir, job(model), INPUTS)
        done = run_one_shot(python, job_dir)
        assert done.returncode == 0, done.stderr.decode()
        results[name] = read_result(job_dir)
    old, new = results["py38"], results["current"]
    assert old.ok and old.versions["python"].startswith("3.8.")
    assert [t.sha256 for t in old.inputs + old.outputs] == [
        t.sha256 for t in new.inputs + new.outputs
    ]
    assert old.input("aux").data.tobytes() == INPUTS["aux"].tobytes()
    assert old.output("img_out").attributes == new.output("img_out").attributes


def test_refusals_under_38(tmp_path: Path, model: Path) -> None:
    write_job(tmp_path, job(model), INPUTS)
    path = tmp_path / "job.json"
    document = json.loads(path.read_text())
    os.symlink("/etc/hostname", tmp_path / "escape.bin")
    document["inputs"][0]["file"] = "escape.bin"
    document["inputs"][1]["shape"] = [2**40]
    path.write_text(json.dumps(document))
    done = run_one_shot(PY38, tmp_path)
    assert done.returncode == board.EXIT_REFUSED
    (record,) = json.loads((tmp_path / "result.json").read_text())["errors"]
    assert record["message"].startswith("inputs[0].file: 'escape.bin' leaves the job directory")


def test_session_under_38(tmp_path: Path, model: Path) -> None:
    transport = LocalTransport(tmp_path / "board", python=PY38)
    with AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS], margin_s=5) as client:
        first = client.submit(job(model, "a"), INPUTS)
        second = client.submit(job(model, "b"), INPUTS)
        assert client.hello["python"].startswith("3.8.")
        assert first.ok and second.ok and second.timings.model_cached
        assert second.output("img_out").attributes["loads"] == 1

        hung = job(model, "hung", hang={"stage": "run"})
        hung = JobSpec(**{**hung.__dict__, "run_timeout_s": 0.5})
        assert isinstance(client.submit(hung, INPUTS).error(), TransportError)

        with pytest.raises(DeviceError, match="killed by SIGSEGV"):
            client.submit(job(model, "crash", crash={"stage": "run", "how": "segv"}), INPUTS)

        assert client.submit(job(model, "after"), INPUTS).ok
        assert client.sessions_started == 3
