"""Releasing places when the process ends: normally, on Ctrl-C, on SIGTERM or SIGHUP.

- Normal end: the caller (pytest, a script) closes the farm, which releases; an ``atexit`` hook
  releases whatever is still held after that.
- Ctrl-C (SIGINT), SIGTERM and SIGHUP (a CI job cancelled, a terminal closed): while places are
  held, a handler releases them first and then raises KeyboardInterrupt, so the run ends the way
  Ctrl-C ends it (pytest still writes its report). Released at once rather than at the end of
  the unwinding: SIGTERM's default runs neither ``finally`` blocks nor ``atexit``, and a
  process's teardown after Ctrl-C can take longer than the one who sent it waits. The handler is
  installed only over the default action (Python's KeyboardInterrupt for SIGINT) and only from
  the main thread, and the previous handler comes back when the last holder closes.
- SIGKILL cannot be caught: :mod:`npu_hil.harness.labgrid.ledger` covers it on the next start.
"""

from __future__ import annotations

import atexit
import logging
import signal
import threading
import weakref
from types import FrameType
from typing import Any, Protocol

__all__ = ["register", "unregister"]

log = logging.getLogger(__name__)

SIGNALS = tuple(
    s
    for s in (signal.SIGINT, getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None))
    if s
)
DEFAULTS = (signal.SIG_DFL, signal.default_int_handler)
"""What a signal does when nobody handles it: die, or (SIGINT) Python's KeyboardInterrupt."""


class _Closable(Protocol):
    def close(self) -> None: ...


_open: weakref.WeakSet[Any] = weakref.WeakSet()
_previous: dict[int, Any] = {}
_atexit_registered = False
_lock = threading.RLock()


def _release_all() -> None:
    for holder in list(_open):
        try:
            holder.close()
        except Exception as exc:  # one coordinator's trouble must not keep the others' places
            log.warning("releasing labgrid places at exit: %s", exc)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    log.warning("signal %d: releasing labgrid places before stopping", signum)
    _release_all()
    _restore()
    raise KeyboardInterrupt(f"signal {signum}")


def _install() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in SIGNALS:
        if signum in _previous:
            continue
        try:
            current = signal.getsignal(signum)
            if current not in DEFAULTS:
                continue  # someone else handles it; their handler should end in an exit
            signal.signal(signum, _on_signal)
            _previous[signum] = current
        except (ValueError, OSError):  # not the main interpreter, or an unsupported signal
            continue


def _restore() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, previous in list(_previous.items()):
        try:
            if signal.getsignal(signum) is _on_signal:
                signal.signal(signum, previous)
        except (ValueError, OSError):
            pass
        del _previous[signum]


def register(holder: _Closable) -> None:
    """Release ``holder``'s places (``holder.close()``) however the process ends."""
    global _atexit_registered
    with _lock:
        _open.add(holder)
        if not _atexit_registered:
            atexit.register(_release_all)
            _atexit_registered = True
        _install()


def unregister(holder: _Closable) -> None:
    with _lock:
        _open.discard(holder)
        if not _open:
            _restore()
