"""Releasing places when the process ends: an ``atexit`` hook, and while places are held a
handler of SIGINT, SIGTERM and SIGHUP that releases them at once and then raises
KeyboardInterrupt (so pytest still writes its report). At once: SIGTERM's default runs neither
``finally`` blocks nor ``atexit``, and a teardown after Ctrl-C can outlast the sender's patience.
Installed only over the default action, from the main thread; SIGKILL is the ledger's.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import signal
import threading
import weakref
from types import FrameType
from typing import Any, Protocol

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
_lock = threading.RLock()


def _release_all() -> None:
    for holder in list(_open):
        try:
            holder.close()
        except Exception as exc:  # one coordinator's trouble must not keep the others' places
            log.warning("releasing labgrid places at exit: %s", exc)


atexit.register(_release_all)  # with nothing held, it releases nothing


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
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(signum) is _on_signal:
                signal.signal(signum, previous)
        del _previous[signum]


def register(holder: _Closable) -> None:
    """Release ``holder``'s places (``holder.close()``) however the process ends."""
    with _lock:
        _open.add(holder)
        _install()


def unregister(holder: _Closable) -> None:
    with _lock:
        _open.discard(holder)
        if not _open:
            _restore()
