"""The agent on the oldest Python a board ships: 3.8 (from pyenv), with only numpy installed.

Every board-side file compiles under it; a one-shot agent under it (the board package with
``--serve``, one job's bulk frame and a shutdown on its stdin) answers exactly as one under the
current Python does, and refuses what it must; a session under it serves a client. Skipped, with
the reason, when that interpreter or its numpy is missing on this machine.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.agent.client import HOST_ADAPTERS, AgentClient
from npu_hil.harness.agent.protocol import InputSpec, JobSpec
from npu_hil.harness.board import wire as board
from npu_hil.harness.errors import DeviceError, TransportError
from npu_hil.harness.transport import LocalTransport
from tests.agent.jobs import BOARD_PACKAGE, FAKE_ADAPTERS, PY38, py38_problem, run_once

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


INPUTS: dict[str, np.ndarray] = {
    "img": np.arange(105, dtype=np.uint8).reshape(1, 5, 7, 3),
    "aux": np.linspace(-1, 1, 8, dtype=np.float16).reshape(1, 2, 2, 2),
}


def test_one_shot_under_38_matches_current_python(tmp_path: Path, model: Path) -> None:
    shots = {
        name: run_once(tmp_path / name, job(model), INPUTS, python=python)
        for name, python in (("py38", PY38), ("current", sys.executable))
    }
    for shot in shots.values():
        assert shot.returncode == 0 and shot.status == board.EXIT_OK, shot.stderr
    assert shots["py38"].frames[0]["python"].startswith("3.8.")
    old, new = shots["py38"].result(), shots["current"].result()
    assert old.ok and old.versions["python"].startswith("3.8.")
    assert not new.versions["python"].startswith("3.8.")
    # The digests the 3.8 agent wrote in its frame's trailer, checked against the buffers as
    # they arrived, are those of the current Python's answer.
    assert [t.sha256 for t in old.inputs + old.outputs] == [
        t.sha256 for t in new.inputs + new.outputs
    ]
    assert [t.file for t in old.inputs + old.outputs] == [t.file for t in new.inputs + new.outputs]
    assert old.input("aux").data.tobytes() == INPUTS["aux"].tobytes()
    assert old.output("img_out").attributes == new.output("img_out").attributes


def escaping_model(workdir: Path) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A job whose model is a link in the cache to a file outside it."""
    workdir.mkdir(mode=0o700)
    (workdir / "cache").mkdir(mode=0o700)
    (workdir / "cache" / "escape.bin").symlink_to("/etc/hostname")

    def edit(document: dict[str, Any]) -> dict[str, Any]:
        document["model"]["path"] = "escape.bin"
        return document

    return edit


def huge_input(workdir: Path) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A job whose second input claims 2**40 elements."""

    def edit(document: dict[str, Any]) -> dict[str, Any]:
        document["inputs"][1]["shape"] = [2**40]
        return document

    return edit


@pytest.mark.parametrize(
    ("hostile", "field", "message"),
    [
        (escaping_model, "model.path", "model.path: 'escape.bin' leaves the model cache through"),
        (huge_input, "inputs[1].shape", "inputs[1].shape: [1099511627776] has more than"),
    ],
)
def test_refusals_under_38(
    tmp_path: Path,
    model: Path,
    hostile: Callable[[Path], Callable[[dict[str, Any]], dict[str, Any]]],
    field: str,
    message: str,
) -> None:
    workdir = tmp_path / "board"
    shot = run_once(workdir, job(model), INPUTS, python=PY38, edit=hostile(workdir))
    assert shot.returncode == 0, shot.stderr  # refused, and the session went on to its shutdown
    assert shot.status == board.EXIT_REFUSED
    assert [frame["op"] for frame in shot.frames] == ["hello", "job", "shutdown"]
    (record,) = shot.errors
    assert (record["type"], record["field"]) == ("JobError", field)
    assert record["message"].startswith(message)
    assert shot.answer is None  # a plain frame: a refused job has no buffers to send back


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
        assert client.agents_started == 3
