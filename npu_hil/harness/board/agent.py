"""The agent: what a resident agent keeps between jobs (adapter instances and loaded models, and
the runtime thread every adapter call runs on under a watchdog: why, and what a hung call costs),
and one job, from its document and input buffers to its result and device buffers, with the
board's logs around it (:mod:`kernlog`); and how a kept job's files are written
(``--keep-remote``). The failures it records and the result document: ``docs/runtime/agent.md``
(The job document, The result document).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import platform
import queue
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .boardstate import pin_clocks, read_board_state, restore_clocks
from .folders import UnsafeFolder, check_folder, job_folder
from .job import Job, JobRefused, check_buffers, validate_job
from .kernlog import KernelLog, StderrCapture, set_log_level
from .loader import load_adapter_base
from .wire import (
    AGENT_VERSION,
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
    sha256_file,
)

if TYPE_CHECKING:
    # Only for the type checker: at run time the same classes are ``adapters.base``, the module
    # every adapter subclasses (see loader).
    from .adapters.base import Adapter, InputTensor, TensorOut
    from .documents import CanaryJson, ErrorJson, ResultJson, TensorJson

log = logging.getLogger("npu-hil-agent")

T = TypeVar("T")


class CallTimedOut(Exception):
    def __init__(self, stage: str, seconds: float) -> None:
        super().__init__(f"{stage} did not return within {seconds:g} s")
        self.stage = stage
        self.seconds = seconds


class RuntimeThread:
    """Runs every adapter call on one long-lived daemon thread (vendor runtimes may tie a context
    to the thread that made it); a call past its timeout marks it stuck, never to be reused."""

    def __init__(self) -> None:
        self.stuck = False
        self._tasks: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="npu-runtime", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            fn, future = task
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the waiting thread, which decides
                future.set_exception(exc)

    def call(self, stage: str, fn: Callable[[], T], timeout: float) -> T:
        if self.stuck:
            raise CallTimedOut(stage, 0.0)
        future: Future[T] = Future()
        self._tasks.put((fn, future))
        if not wait([future], timeout).done:
            self.stuck = True
            raise CallTimedOut(stage, timeout)
        return future.result()

    def stop(self) -> None:
        if not self.stuck:
            self._tasks.put(None)


def describe_exception(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def traceback_tail(exc: BaseException, limit: int = 4000) -> str:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return text[-limit:]


class StageFailed(Exception):
    """An adapter stage failed with a typed record for result.json."""

    def __init__(self, record: ErrorJson) -> None:
        super().__init__(record["message"])
        self.record = record

    @classmethod
    def of(cls, kind: str, stage: str, message: str, **extra: object) -> StageFailed:
        return cls(failure(kind, stage, message, **extra))


class Agent:
    """Runs jobs. One instance per process; serving, it keeps adapters and loaded models between
    jobs, each adapter call under the watchdog."""

    def __init__(
        self, adapter_dirs: list[str], root: str | None, model_cache_size: int = 4
    ) -> None:
        self.adapter_dirs = adapter_dirs
        self.root = os.path.realpath(root) if root else None
        self.model_cache_size = max(1, model_cache_size)
        self.base = load_adapter_base(adapter_dirs)
        self.runtime = RuntimeThread()
        self.adapters: dict[tuple[str, str], Adapter] = {}
        self.versions_cache: dict[tuple[str, str], dict[str, str]] = {}
        self.models: OrderedDict[tuple[tuple[str, str], str], Any] = OrderedDict()
        # The running job's runtime log level: part of the adapter's key, since a runtime reads
        # its level once, when it initialises (a job at another level gets an adapter of its own).
        self.log_level: int | None = None
        # One request at a time, whichever connection it came on: the caches and the runtime
        # thread are shared, and a vendor runtime is not re-entrant.
        self.lock = threading.Lock()
        self.jobs_run = 0
        self.log_env: str | None = None

    def _adapter_key(self, name: str, options: Mapping[str, object]) -> tuple[str, str]:
        level = "" if self.log_level is None else f" log_level={self.log_level}"
        return name, json.dumps(options, sort_keys=True, default=jsonable) + level

    def adapter(self, name: str, options: Mapping[str, object], timeout: float) -> Adapter:
        key = self._adapter_key(name, options)
        if key in self.adapters:
            return self.adapters[key]

        def create() -> Adapter:
            try:
                module = importlib.import_module("adapters." + name)
            except ImportError as exc:
                # The vendor package or library is not on this board.
                raise StageFailed.of(
                    "UnsupportedError",
                    "init",
                    f"adapter {name!r} cannot be imported here: {describe_exception(exc)}",
                ) from None
            cls = getattr(module, "ADAPTER", None)
            if not isinstance(cls, type) or not issubclass(cls, self.base.Adapter):
                raise StageFailed.of(
                    "UnsupportedError", "init", f"adapters/{name}.py defines no ADAPTER class"
                )
            set_log_level(getattr(cls, "log_level_env", None), self.log_level)
            instance: Adapter = cls(dict(options))
            return instance

        self.adapters[key] = self._call("init", name, create, timeout)
        return self.adapters[key]

    def versions(self, name: str, options: Mapping[str, object], timeout: float) -> dict[str, str]:
        key = self._adapter_key(name, options)
        if key not in self.versions_cache:
            adapter = self.adapter(name, options, timeout)
            try:
                reported = self._call("init", name, adapter.versions, timeout)
                found = {str(k): str(v) for k, v in reported.items()}
            except StageFailed as failed:
                if self.runtime.stuck:
                    raise
                # Versions are evidence, not a precondition: a runtime that cannot say still runs.
                found = {"versions_error": failed.record["message"]}
            found.update(
                agent=AGENT_VERSION,
                python=platform.python_version(),
                numpy=np.__version__,
                platform=platform.platform(),
                machine=platform.machine(),
            )
            self.versions_cache[key] = found
        return dict(self.versions_cache[key])

    def model(self, job: Job, adapter: Adapter, timeout: float) -> tuple[Any, bool]:
        """The loaded model for the job's artifact, from the cache when this adapter instance
        already loaded the same bytes. A cached model needs no hashing: it is the artifact the
        job names by sha256, whatever the file holds now."""
        key = (self._adapter_key(job.adapter, job.options), job.model_sha256)
        if key in self.models:
            self.models.move_to_end(key)
            return self.models[key], True
        actual = sha256_file(job.model_path)
        if actual != job.model_sha256:
            raise JobRefused(
                "model.sha256",
                "checksum",
                f"the model file hashes to {actual}, the job says {job.model_sha256}",
            )
        handle = self._call("load", job.adapter, lambda: adapter.load(job.model_path), timeout)
        self.models[key] = handle
        while len(self.models) > self.model_cache_size:
            (old_adapter_key, old_sha), old = self.models.popitem(last=False)
            self._release(old_adapter_key, old_sha, old, timeout)
        return handle, False

    def _release(self, adapter_key: tuple[str, str], sha: str, handle: Any, timeout: float) -> None:
        owner = self.adapters.get(adapter_key)
        if owner is None:
            return
        try:
            self._call("release", adapter_key[0], lambda: owner.release(handle), timeout)
        except StageFailed as failed:
            log.warning("releasing model %s failed: %s", sha[:12], failed.record["message"])

    def _call(self, stage: str, adapter: str, fn: Callable[[], T], timeout: float) -> T:
        """One adapter call under the watchdog, with every failure turned into a typed record."""
        try:
            return self.runtime.call(stage, fn, timeout)
        except CallTimedOut as exc:
            raise StageFailed.of(
                "TimeoutError",
                stage,
                f"adapter {adapter!r} did not return from {stage} within {exc.seconds:g} s; "
                "a hung runtime call cannot be interrupted, so the agent exits after reporting",
            ) from None
        except StageFailed:
            raise
        except self.base.AdapterError as exc:
            raise StageFailed(exc.record()) from None
        except BaseException as exc:
            log.error("adapter %s raised during %s:\n%s", adapter, stage, traceback_tail(exc))
            raise StageFailed.of(
                "DeviceError",
                stage,
                f"adapter {adapter!r} raised {describe_exception(exc)} during {stage}",
                detail=traceback_tail(exc),
            ) from None

    def shutdown(self, timeout: float = 30.0) -> None:
        """Release every cached model (unless the runtime thread is stuck in a vendor call)."""
        while self.models and not self.runtime.stuck:
            (adapter_key, sha), handle = self.models.popitem(last=False)
            self._release(adapter_key, sha, handle, timeout)
        self.runtime.stop()

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
                # The buffer's bytes as the runtime holds them, whatever its dtype.
                flat = np.ascontiguousarray(tensor.data).reshape(-1).view(np.uint8)
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
