"""What a resident agent keeps between jobs: adapter instances and loaded models, and the runtime
thread every adapter call runs on under a watchdog (why, and what a hung call costs:
``docs/runtime/agent.md``, The job document).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import platform
import queue
import threading
import traceback
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from .job import Job, JobRefused
from .kernlog import set_log_level
from .loader import load_adapter_base
from .wire import AGENT_VERSION, failure, jsonable, sha256_file

if TYPE_CHECKING:
    # Only for the type checker: at run time the same classes are ``adapters.base``, the module
    # every adapter subclasses (see loader).
    from .adapters.base import Adapter
    from .documents import ErrorJson

log = logging.getLogger("npu-hil-agent")

T = TypeVar("T")


class CallTimedOut(Exception):
    def __init__(self, stage: str, seconds: float) -> None:
        super().__init__(f"{stage} did not return within {seconds:g} s")
        self.stage = stage
        self.seconds = seconds


class _Task(Generic[T]):
    def __init__(self, fn: Callable[[], T]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.value: T | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self.fn()
        except BaseException as exc:  # handed to the waiting thread, which decides
            self.error = exc
        finally:
            self.done.set()


class RuntimeThread:
    """Runs every adapter call on one long-lived daemon thread (vendor runtimes may tie a context
    to the thread that made it); a call past its timeout marks it stuck, never to be reused."""

    def __init__(self) -> None:
        self.stuck = False
        self._tasks: queue.Queue[_Task[Any] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="npu-runtime", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            task.run()

    def call(self, stage: str, fn: Callable[[], T], timeout: float) -> T:
        if self.stuck:
            raise CallTimedOut(stage, 0.0)
        task = _Task(fn)
        self._tasks.put(task)
        if not task.done.wait(timeout):
            self.stuck = True
            raise CallTimedOut(stage, timeout)
        if task.error is not None:
            raise task.error
        return task.value  # type: ignore[return-value]  # set whenever error is None

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


class AdapterCache:
    """Adapters and loaded models of one agent process, each call under the watchdog."""

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
                {
                    "agent": AGENT_VERSION,
                    "python": platform.python_version(),
                    "numpy": np.__version__,
                    "platform": platform.platform(),
                    "machine": platform.machine(),
                }
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
