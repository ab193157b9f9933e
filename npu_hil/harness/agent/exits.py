"""How the host names an agent's end."""

from __future__ import annotations

import re
import signal

from npu_hil.harness.errors import AgentKilledError, DeviceError

__all__ = ["agent_ended", "describe_exit", "safe_name", "tail"]


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "exit status unknown"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def agent_ended(message: str, returncode: int | None) -> DeviceError:
    """The error for an agent that ended without answering: killed by a signal is
    infrastructure (AgentKilledError), any other end the runtime's (DeviceError)."""
    if returncode is not None and returncode < 0:
        return AgentKilledError(message, signal=-returncode)
    return DeviceError(message)


def tail(stderr: bytes, head: int = 1500, tail: int = 2500) -> str:
    """The start and the end of a process's stderr: a crash report (Python's fault handler) puts
    the crashing thread's stack first, the last log lines come last."""
    text = stderr.decode("utf-8", errors="replace").strip()
    if not text:
        return "(nothing on stderr)"
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n[... {len(text) - head - tail} characters ...]\n{text[-tail:]}"


def safe_name(name: str, limit: int = 80) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".")[:limit] or "x"
