"""SIGTERM ends a run the way Ctrl-C does: the session finishes, the boards' sessions close and the
report is written, marked as stopped early (a CI timeout, ``timeout(1)``, systemd and ``npu-hil
nightly`` stop pytest with SIGTERM). Installed once a run uses boards, only over the default
action, and only once: a second SIGTERM ends the process at once."""

from __future__ import annotations

import signal
import threading
from types import FrameType


def _interrupt(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise KeyboardInterrupt("stopped by SIGTERM")


def sigterm_interrupts() -> bool:
    """Make SIGTERM raise KeyboardInterrupt in this process's main thread; True when it now
    does (False: not the main thread, or SIGTERM already has a handler of someone else's)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    current = signal.getsignal(signal.SIGTERM)
    if current is _interrupt:
        return True
    if current is not signal.SIG_DFL:
        return False
    signal.signal(signal.SIGTERM, _interrupt)
    return True
