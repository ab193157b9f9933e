"""The agent: runs one job, from its document and input buffers to its result and device buffers,
with the board's logs around it (:mod:`kernlog`); and how a kept job's files are written
(``--keep-remote``). The failures it records and the result document: ``docs/runtime/agent.md``
(The job document, The result document).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from .boardstate import pin_clocks, read_board_state, restore_clocks
from .cache import AdapterCache, StageFailed, describe_exception, traceback_tail
from .folders import UnsafeFolder, check_folder, job_folder
from .job import Job, JobRefused, check_buffers, validate_job
from .kernlog import KernelLog, StderrCapture
from .wire import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_TIMEOUT,
    JOB_FILE,
    JOBS_FOLDER,
    RESULT_FILE,
    RESULT_SCHEMA,
    failure,
    jsonable,
    os_error_record,
)

if TYPE_CHECKING:
    from .adapters.base import Adapter, InputTensor, TensorOut
    from .documents import CanaryJson, ResultJson, TensorJson

log = logging.getLogger("npu-hil-agent")


class Agent(AdapterCache):
    """Runs jobs. One instance per process; serving, it keeps adapters and models between jobs."""

    def __init__(
        self, adapter_dirs: list[str], root: str | None, model_cache_size: int = 4
    ) -> None:
        super().__init__(adapter_dirs, root, model_cache_size)
        self.jobs_run = 0
        self.log_env: str | None = None

    def run_job(
        self, doc: object, buffers: list[Any], damaged: tuple[int, ...] = ()
    ) -> tuple[ResultJson, int, list[memoryview]]:
        """Run a job that came as a frame: its document, its input buffers (hashed by the frame
        stream as they arrived) and the indices of those whose sha256 was not the sender's.
        Returns the result, the job's status and the device buffers its records describe, in
        their order, for the answer."""
        device: list[memoryview] = []
        started = time.perf_counter()
        result: ResultJson = {
            "schema": RESULT_SCHEMA,
            "job_id": None,
            "ok": False,
            "adapter": None,
            "versions": {},
            "timings": {
                "load_s": 0.0,
                "run_s": 0.0,
                "copy_s": 0.0,
                "total_s": 0.0,
                "model_cached": False,
            },
            "inputs": [],
            "outputs": [],
            "errors": [],
        }
        status = EXIT_OK
        self.log_level = None
        self.log_env = None
        kernel = KernelLog()
        kernel.mark()
        capture = StderrCapture()
        capture.start()
        try:
            self._run(doc, buffers, damaged, result, device)
        except JobRefused as refused:
            result["errors"].append(refused.record())
            status = EXIT_REFUSED
        except StageFailed as failed:
            result["errors"].append(failed.record)
            status = EXIT_TIMEOUT if failed.record["type"] == "TimeoutError" else EXIT_OK
        except OSError as exc:  # the board's own trouble (a full disk): said by its name
            log.error("job %s: %s", result["job_id"], exc)
            result["errors"].append(os_error_record(exc, "agent"))
            status = EXIT_FAILED
        except Exception as exc:  # an agent bug: still report it as a typed record
            log.error("agent error:\n%s", traceback_tail(exc))
            result["errors"].append(
                failure("AgentError", "agent", describe_exception(exc), detail=traceback_tail(exc))
            )
            status = EXIT_FAILED
        result["board_log"] = {
            "runtime": capture.stop(self.log_level, self.log_env),
            "kernel": kernel.delta(),
        }
        if self.runtime.stuck:
            status = EXIT_TIMEOUT
        result["ok"] = not result["errors"]
        result["timings"]["total_s"] = time.perf_counter() - started
        self.jobs_run += 1
        # Exactly the buffers the result describes, in its order (a run that failed while its
        # buffers were described has records for some of them only).
        del device[len(result["inputs"]) + len(result["outputs"]) :]
        return result, status, device

    def _run(
        self,
        doc: object,
        buffers: list[Any],
        damaged: tuple[int, ...],
        result: ResultJson,
        device: list[memoryview],
    ) -> None:
        if not isinstance(doc, dict):
            raise JobRefused("job", "type", f"expected a job document, got {doc!r}"[:300])
        if isinstance(doc.get("job_id"), str):
            result["job_id"] = doc["job_id"]
        if isinstance(doc.get("adapter"), str):
            result["adapter"] = doc["adapter"]
        job = validate_job(doc, self.root, self.adapter_dirs)
        check_buffers(job, buffers, damaged)
        timings = result["timings"]
        load_timeout = job.timeouts["load"]

        self.log_level = job.log_level
        adapter = self.adapter(job.adapter, job.options, load_timeout)
        self.log_env = adapter.log_level_env
        result["versions"] = self.versions(job.adapter, job.options, load_timeout)

        t0 = time.perf_counter()
        model, cached = self.model(job, adapter, load_timeout)
        timings["load_s"] = 0.0 if cached else time.perf_counter() - t0
        timings["model_cached"] = cached
        if not cached:
            # Some runtimes can say their versions only once a model is loaded (RKNN's API and
            # driver versions need a context): ask again after every fresh load.
            self.versions_cache.pop(self._adapter_key(job.adapter, job.options), None)
            result["versions"] = self.versions(job.adapter, job.options, load_timeout)

        # The frame's own buffers: the bytes are not copied again.
        tensors = [
            self.base.InputTensor(
                name=item.spec.name,
                data=np.frombuffer(data, dtype=np.uint8),
                layout=item.spec.layout,
                shape=list(item.spec.shape),
                dtype=item.spec.dtype,
                pass_through=item.spec.pass_through,
            )
            for item, data in zip(job.inputs, buffers)  # noqa: B905 - check_buffers counted them
        ]
        run, run_wall = self._runs(job, adapter, model, tensors, result)
        reported = {str(k): float(v) for k, v in (run.timings or {}).items()}
        # The adapter's own run time excludes its copies when it can tell them apart.
        timings["run_s"] = reported.get("run_s", run_wall)
        t0 = time.perf_counter()
        for records, prefix, tensors_out in (
            (result["inputs"], "in", run.inputs),
            (result["outputs"], "out", run.outputs),
        ):
            for index, tensor in enumerate(tensors_out):
                flat = device_bytes(tensor)
                device.append(flat.data)
                records.append(describe_tensor(f"{prefix}_{index}.bin", tensor, flat))
        timings["copy_s"] = reported.get("copy_s", 0.0) + (time.perf_counter() - t0)
        if reported:
            timings["adapter"] = reported

    def _runs(
        self, job: Job, adapter: Adapter, model: Any, tensors: list[InputTensor], result: ResultJson
    ) -> tuple[Any, float]:
        """``job.warmup`` untimed calls, then ``job.runs`` timed ones, each under the run
        timeout; the board's state is read just before and just after the timed calls. Records
        every timed call's wall time (``runs_s``) and, where the adapter tells its run apart
        from its copies, its own figure per call (``adapter_runs_s``). Returns the last run
        and its wall time."""
        timings = result["timings"]

        def once() -> tuple[Any, float]:
            if job.canary is not None:
                # Before every run, outside its timing: the buffers checked are the last run's,
                # and an earlier run's bytes must not pass for this one's.
                result["canary"] = self._fill_canary(job, adapter, model, job.canary)
            t0 = time.perf_counter()
            out = self._call(
                "run",
                job.adapter,
                lambda: adapter.run(model, tensors, job.outputs),
                job.timeouts["run"],
            )
            wall = time.perf_counter() - t0
            if not isinstance(out, self.base.RunOutput):
                raise StageFailed.of(
                    "DeviceError",
                    "run",
                    f"adapter {job.adapter!r} returned {out!r}, not a RunOutput",
                )
            return out, wall

        # Pinned before the warm-up so that it runs at the clocks the timed runs will have;
        # restored whatever happens to the runs.
        pinned = pin_clocks() if job.pin_clocks else None
        walls: list[float] = []
        own: list[float] = []
        run: Any = None
        wall = 0.0
        try:
            for _ in range(job.warmup):
                once()
            # A simulated board has no clocks or zones of its own: the host's are not its state.
            simulated = adapter.simulated
            if not simulated:
                result["board_state"] = {"before": read_board_state()}
            for _ in range(job.runs):
                run, wall = once()
                walls.append(wall)
                reported = (run.timings or {}).get("run_s")
                if isinstance(reported, (int, float)) and not isinstance(reported, bool):
                    own.append(float(reported))
            if not simulated:
                result["board_state"]["after"] = read_board_state()
        finally:
            if pinned is not None:
                result.setdefault("board_state", {})["pinned"] = {
                    "governors": pinned,
                    "not_restored": restore_clocks(pinned),
                }
        timings["runs"] = job.runs
        timings["warmup"] = job.warmup
        timings["runs_s"] = walls
        if len(own) == len(walls):
            timings["adapter_runs_s"] = own
        return run, wall

    def _fill_canary(self, job: Job, adapter: Adapter, model: Any, pattern: bytes) -> CanaryJson:
        """The adapter fills what it owns; the result says what was filled and, where nothing
        was, why (so the host never reads "no unwritten bytes" into a buffer never filled)."""
        fill = self._call(
            "run", job.adapter, lambda: adapter.fill_canary(model, pattern), job.timeouts["run"]
        )
        if not isinstance(fill, self.base.CanaryFill):
            raise StageFailed.of(
                "AgentError",
                "run",
                f"adapter {job.adapter!r} fill_canary returned {fill!r}, not a CanaryFill",
            )
        return {
            "pattern": pattern.hex(),
            "outputs": bool(fill.outputs),
            "inputs": bool(fill.inputs),
            "reason": str(fill.reason or ""),
        }


# A result's records of the device buffers, and a kept job's files.


def create_new(path: str, mode: str) -> Any:
    """Open ``path`` for writing as a new file that cannot be anything planted there: what sits
    at the name (a stale file or a symlink) is unlinked, which never touches a link's target, and
    the file is created with ``O_EXCL | O_NOFOLLOW``, so a link planted in between makes the open
    fail instead of writing through it."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o666)
    return os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8")


def device_bytes(tensor: TensorOut) -> np.ndarray:
    """A device buffer's bytes as the runtime holds them, whatever its dtype (flat uint8)."""
    return np.ascontiguousarray(tensor.data).reshape(-1).view(np.uint8)


def describe_tensor(filename: str, tensor: TensorOut, flat: np.ndarray) -> TensorJson:
    """The result's record of a device buffer, but its sha256: the buffer goes back in a bulk
    frame, whose trailer carries it, computed as it is written (the host puts it in the record)."""
    return {
        "name": str(tensor.name),
        "file": filename,
        "nbytes": int(flat.size),
        "layout": str(tensor.layout),
        "dtype": str(tensor.dtype),
        "shape": [int(d) for d in tensor.shape],
        "attributes": json.loads(json.dumps(tensor.attributes or {}, default=jsonable)),
    }


def new_kept_dir(value: Any) -> str:
    """The folder a framed job's files are kept in for inspection (the host's ``keep``): exactly
    ``jobs/<name>`` in the workdir, made here, new, and this user's own, so a request cannot
    make the agent write anywhere else (JobRefused). An OSError is the board's disk (full,
    read-only): the job runs without its view."""
    folder = job_folder(value)
    if folder is None:
        raise JobRefused("keep", "path", f"{value!r} is not a job folder under {JOBS_FOLDER}/")
    os.makedirs(JOBS_FOLDER, mode=0o700, exist_ok=True)  # an OSError: the disk's, said as such
    try:
        check_folder(JOBS_FOLDER)
    except UnsafeFolder as exc:
        raise JobRefused("keep", "unsafe", str(exc)) from None
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        # Never into a folder or a link planted under that name: a kept view is always new.
        raise JobRefused("keep", "path", f"{value!r} exists already") from None
    return folder


def write_kept_view(
    folder: str, doc: object, inputs: list[Any], result: ResultJson, device: list[memoryview]
) -> OSError | None:
    """A job's files for a person to read, written after it ran: job.json (the document, each
    input naming its file), ``input_<i>.bin``, the device buffers under the names
    the result's records give, and result.json. A view for a person to read: the job itself never
    touched the disk, and a view that cannot be written (a full disk) costs the job nothing."""
    try:
        document = dict(doc) if isinstance(doc, dict) else {"job": doc}
        given = document.get("inputs")
        if isinstance(given, list):
            document["inputs"] = [
                dict(item, file=f"input_{index}.bin") if isinstance(item, dict) else item
                for index, item in enumerate(given)
            ]
        for index, data in enumerate(inputs):
            with create_new(os.path.join(folder, f"input_{index}.bin"), "wb") as handle:
                handle.write(data)
        records = [*result["inputs"], *result["outputs"]]
        for record, data in zip(records, device):  # noqa: B905 - the records own the buffers
            with create_new(os.path.join(folder, os.path.basename(record["file"])), "wb") as f:
                f.write(data)
        with create_new(os.path.join(folder, JOB_FILE), "w") as handle:
            json.dump(document, handle, indent=1, default=jsonable)
    except OSError as exc:
        return exc
    # result.json last and atomically: a reader never sees half a file.
    path = os.path.join(folder, RESULT_FILE)
    tmp = path + ".tmp"
    try:
        with create_new(tmp, "w") as handle:
            json.dump(result, handle, indent=1, default=jsonable)
        # A rename replaces the name itself: a symlink planted as result.json is not followed.
        os.replace(tmp, path)
    except OSError as exc:
        log.error("cannot write %s: %s", path, exc)
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # half a file on a full disk holds space the next job needs
        return exc
    return None
