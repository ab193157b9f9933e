"""A process's stderr drained by a thread into a bounded tail: a chatty process never blocks on a
full pipe, and a crash's last lines are kept for the report."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

STDERR_TAIL_BYTES = 64 * 1024


class StderrTail:
    """Reads ``read(n)`` on a daemon thread until it returns ``b""`` or raises one of ``lost``
    (the stream ended), keeping the last :data:`STDERR_TAIL_BYTES`; each chunk also goes to
    ``log`` at debug level when one is given."""

    def __init__(
        self,
        read: Callable[[int], bytes],
        lost: tuple[type[BaseException], ...],
        *,
        name: str,
        log: logging.Logger | None = None,
    ) -> None:
        self._read = read
        self._lost = lost
        self._name = name
        self._log = log
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = self._read(65536)
            except self._lost:
                return
            if not chunk:
                return
            if self._log is not None:
                self._log.debug("%s stderr: %s", self._name, chunk.decode(errors="replace"))
            with self._lock:
                self._tail += chunk
                del self._tail[:-STDERR_TAIL_BYTES]

    def tail(self) -> bytes:
        with self._lock:
            return bytes(self._tail)

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the stream's end (what came is kept either way)."""
        self._thread.join(timeout)
