"""The runtime thread and its watchdog: every adapter call on one long-lived thread, with a timeout.

Vendor runtimes may tie state to the thread that created it, so every adapter call runs on the
same daemon thread while the caller waits with the job's timeout. A hung vendor call cannot be
interrupted from Python: on expiry the thread is marked stuck and never used again; the agent
reports a ``TimeoutError`` and exits (status 3), and the host starts a new agent. A call that
hangs while holding the GIL stops the watchdog too: the host's own timeout (job timeouts plus a
margin) is the backstop for that case.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

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
    """Runs every adapter call on one long-lived daemon thread.

    Vendor runtimes may tie a context to the thread that created it, so all calls go through the
    same thread; the caller waits with a timeout and, on expiry, marks the thread stuck. A stuck
    thread is never reused: the agent reports and exits.
    """

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
