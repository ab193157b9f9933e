"""SIGTERM ends a run the way Ctrl-C does: the session finishes, the boards' sessions close (their
scratch folders with them) and the report is written, marked as stopped early.

A CI job's timeout, ``timeout(1)``, systemd and ``npu-hil nightly`` itself (when it is
interrupted) stop pytest with SIGTERM, whose default action ends the process where it stands:
no report, and every board's scratch folder left behind. pytest already turns SIGINT into an
orderly stop (KeyboardInterrupt); this gives SIGTERM the same path. It is installed only once the
run is using boards (the plugin costs nothing in a run that does not), only over the default
action (a handler the embedding program set is kept), and only once: a second SIGTERM ends the
process at once, as a user who insists expects.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

__all__ = ["sigterm_interrupts"]


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
