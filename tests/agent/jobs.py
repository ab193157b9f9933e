"""What the agent and transport tests build again and again: the fake ``echo`` adapter's job, a
small job for the simulated NPU, one job run by a one-shot agent process, and the Python 3.8
interpreter the board-side code is proven on."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from npu_hil.harness import board
from npu_hil.harness.agent.protocol import (
    BulkAnswer,
    InputSpec,
    JobSpec,
    ModelRef,
    Replay,
    Result,
    StreamEnded,
    bulk_request,
    frame_job,
    read_frame,
    result_from_document,
)
from npu_hil.harness.board.wire import (
    decode_frame,
    encode_frame,
    frame_length,
    sha256_file,
)
from npu_hil.harness.models import build, save

FAKE_ADAPTERS = Path(__file__).parent / "fake_adapters" / "adapters"
# The board package, run as a folder (``python npu_hil/harness/board --serve``), as a board runs
# it.
BOARD_PACKAGE = Path(board.__file__).parent
X = np.arange(2 * 3 * 4 * 4, dtype=np.int8).reshape(2, 3, 4, 4)
PY38 = os.environ.get("NPU_HIL_PY38", "/root/.pyenv/versions/3.8.18/bin/python")


def echo_job(model: Path, job_id: str = "job", **overrides: Any) -> JobSpec:
    """A job for the fake ``echo`` adapter with one int8 input shaped like :data:`X`."""
    fields: dict[str, Any] = {
        "job_id": job_id,
        "adapter": "echo",
        "model": model,
        "inputs": (InputSpec("x", "NCHW", (2, 3, 4, 4), "int8"),),
        "load_timeout_s": 10.0,
        "run_timeout_s": 10.0,
    }
    fields.update(overrides)
    return JobSpec(**fields)


def sim_job(folder: Path, job_id: str, target: str) -> tuple[JobSpec, dict[str, np.ndarray]]:
    """A 1x1 convolution on the simulated NPU of ``target`` (its ONNX model saved in
    ``folder``) and its input."""
    model = save(build("conv1x1", (1, 3, 3, 5)), folder / "model.onnx")
    x = np.random.default_rng(1).integers(0, 256, (1, 3, 3, 5), dtype=np.uint8)
    spec = JobSpec(
        job_id=job_id,
        adapter="sim",
        model=model,
        inputs=(InputSpec("input", "NCHW", (1, 3, 3, 5), "uint8"),),
        adapter_options={"target": target},
        load_timeout_s=30,
        run_timeout_s=30,
    )
    return spec, {"input": x}


@functools.cache
def py38_problem() -> str | None:
    """Why :data:`PY38` cannot prove the board-side code, or None when it can (asked once)."""
    if not os.access(PY38, os.X_OK):
        return f"Python 3.8 interpreter not found at {PY38} (set NPU_HIL_PY38 to another one)"
    probe = subprocess.run(
        [PY38, "-c", "import sys, numpy; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    if probe.returncode != 0:
        return f"{PY38} cannot import numpy: {probe.stderr.decode().strip()[-200:]}"
    if probe.stdout.decode().strip() != "3.8":
        return f"{PY38} is Python {probe.stdout.decode().strip()}, not 3.8"
    return None


def cache_model(workdir: Path, model: str | os.PathLike[str]) -> ModelRef:
    """Copy a model into ``workdir``'s cache as the client deploys it: ``cache/<sha256>/<name>``."""
    sha = sha256_file(str(model))
    relative = f"{sha}/{Path(model).name}"
    target = workdir / "cache" / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(model, target)
    return ModelRef(relative, sha)


@dataclass
class OneShot:
    """One job run by a one-shot agent process: how the process ended and what it answered."""

    returncode: int
    stderr: str
    frames: list[dict[str, Any]] = field(default_factory=list)  # every frame, hello first
    response: dict[str, Any] | None = None  # the job's answer (None: ended before answering)
    answer: BulkAnswer | None = None  # the answer's buffers

    @property
    def status(self) -> int | None:
        """The job's status as the agent gave it in its answer (``wire.EXIT_*``)."""
        return None if self.response is None else self.response.get("status")

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The result's error records (a refused request's one ``error`` record otherwise)."""
        if self.response is None:
            return []
        if "error" in self.response:
            return [self.response["error"]]
        return list(self.response["result"]["errors"])

    def result(self, job_id: str | None = None) -> Result:
        """The answer's result, verified as the client verifies it."""
        assert self.response is not None, f"no answer; stderr: {self.stderr[-2000:]}"
        document = self.response["result"]
        return result_from_document(
            document, self.answer, where="answer", job_id=job_id or str(document.get("job_id"))
        )


def run_once(
    workdir: Path,
    spec: JobSpec,
    inputs: Mapping[str, Any] | Sequence[Any],
    *extra: str,
    python: str = sys.executable,
    adapters: bool = True,
    edit: Callable[[dict[str, Any]], Any] | None = None,
    buffers: list[memoryview] | None = None,
    keep: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 60.0,
) -> OneShot:
    """Run one job as a one-shot agent does: the board package with ``--serve`` in
    ``workdir`` (made private), the job's bulk frame and a shutdown on stdin, every frame of
    stdout read back. ``edit`` changes the job document before it is sent (what it returns is
    sent: a hostile document), ``buffers`` replaces the input buffers, ``extra`` goes on the
    agent's command line."""
    workdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    model = cache_model(workdir, spec.model)
    document, framed = frame_job(spec, inputs, model)
    sent: Any = document if edit is None else edit(document)
    request: dict[str, Any] = {"op": "job", "job": sent}
    if keep is not None:
        request["keep"] = keep
    stdin = b"".join(bulk_request(request, framed if buffers is None else buffers))
    stdin += encode_frame({"op": "shutdown"})
    argv = [python, str(BOARD_PACKAGE), "--serve", "--root", "cache", *extra]
    if adapters:
        argv += ["--adapters", str(FAKE_ADAPTERS)]
    done = subprocess.run(
        argv,
        input=stdin,
        capture_output=True,
        cwd=workdir,
        env=None if env is None else dict(env),
        timeout=timeout,
        check=False,
    )
    shot = OneShot(done.returncode, done.stderr.decode("utf-8", "replace"))
    for message, answer in read_frames(done.stdout):
        shot.frames.append(message)
        if message.get("op") in ("job", "error") and shot.response is None:
            shot.response, shot.answer = message, answer
    return shot


def read_frames(data: bytes) -> list[tuple[dict[str, Any], BulkAnswer | None]]:
    """The frames in ``data`` (an agent's stdout, a relay's answer), each message with its bulk
    buffers where it had some; a frame cut short at the end is left out."""
    found: list[tuple[dict[str, Any], BulkAnswer | None]] = []
    replay = Replay(data)
    while True:
        try:
            found.append(read_frame(replay, float("inf")))
        except StreamEnded:
            return found


class RawSession:
    """The resident agent spoken to directly: ``--serve`` in ``tmp_path``, its model cache
    ``cache/`` there (``--root``), as the client starts it. A test finishes every one it opens
    (tests/agent/conftest.py checks): one left running holds its three pipes until the test
    process exits."""

    opened: ClassVar[list[RawSession]] = []

    def __init__(self, tmp_path: Path, *extra: str) -> None:
        argv = [sys.executable, str(BOARD_PACKAGE), "--serve", "--root", "cache"]
        self.process = subprocess.Popen(
            [*argv, "--adapters", str(FAKE_ADAPTERS), *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
        )
        RawSession.opened.append(self)

    def send_bytes(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(encode_frame(message))

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        header = self.process.stdout.read(8)
        assert len(header) == 8, header
        return decode_frame(self.process.stdout.read(frame_length(header)))

    def finish(self) -> tuple[int, bytes, bytes]:
        out, err = self.process.communicate(timeout=30)
        return self.process.returncode, out, err
