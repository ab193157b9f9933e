"""The parts of a result beside the tensors, read and checked on the host: ``canary``,
``board_state`` and ``board_log`` (:mod:`npu_hil.harness.board.kernlog`, ``runlog``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from npu_hil.harness.errors import ProtocolError

if TYPE_CHECKING:
    from npu_hil.harness.board.documents import LogJson

__all__ = ["BoardLog", "Canary", "LogExcerpt", "read_board_log", "read_board_state", "read_canary"]


@dataclass(frozen=True)
class Canary:
    """result.json's ``canary``: the pattern, whether the outputs and the input buffers the
    adapter allocates started the last run filled with it, and why not where they did not."""

    pattern: bytes
    outputs: bool
    inputs: bool
    reason: str = ""


def read_canary(raw: Any, where: str) -> Canary | None:
    """The checked ``canary`` object of a result (None: the job carried none)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ProtocolError(f"{where}.canary: expected an object, got {str(raw)[:200]}")
    pattern = raw.get("pattern")
    try:
        value = bytes.fromhex(pattern) if isinstance(pattern, str) else b""
    except ValueError:
        value = b""
    if len(value) < 2:
        raise ProtocolError(f"{where}.canary.pattern: expected hex bytes, got {pattern!r}")
    flags = {key: raw.get(key, False) for key in ("outputs", "inputs")}
    if not all(isinstance(v, bool) for v in flags.values()):
        raise ProtocolError(f"{where}.canary: outputs and inputs must be true or false: {raw!r}")
    return Canary(value, flags["outputs"], flags["inputs"], str(raw.get("reason") or ""))


def read_board_state(raw: object, where: str) -> dict[str, dict[str, object]]:
    """The checked ``board_state`` object of a result ({} when the agent sent none): its
    readings by phase, each an object (what it holds is read where it is used)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(
        k in ("before", "after", "pinned") and isinstance(v, dict) for k, v in raw.items()
    ):
        raise ProtocolError(
            f"{where}.board_state: expected {{'before': {{..}}, 'after': {{..}}}}, "
            f"got {str(raw)[:200]}"
        )
    return raw


@dataclass(frozen=True)
class LogExcerpt:
    """One of the board's logs in a job's window, as the agent read it: ``source`` (``kmsg``,
    ``dmesg`` or ``stderr``; ``absent`` with ``why`` when it could not be read), the newest
    ``lines`` within the agent's caps and how many older ones it ``dropped``; ``lost`` counts
    kernel records the ring buffer overwrote before they were read."""

    source: str
    lines: tuple[str, ...] = ()
    why: str = ""
    dropped: int = 0
    lost: int = 0
    level: int | None = None
    env: str | None = None

    def to_dict(self) -> LogJson:
        """The excerpt as the agent sends it: the optional keys only where they say something."""
        optional = ("why", "dropped", "lost", "level", "env")
        out = {key: getattr(self, key) for key in optional if getattr(self, key)}
        return cast("LogJson", {"source": self.source, "lines": list(self.lines), **out})


@dataclass(frozen=True)
class BoardLog:
    """result.json's ``board_log``: the kernel's and the runtime's logs in the job's window."""

    kernel: LogExcerpt
    runtime: LogExcerpt


MAX_LOG_LINES = 1000
"""Far above the agent's own cap: a result holding more was not written by an agent."""


def read_board_log(raw: Any, where: str) -> BoardLog | None:
    """The checked ``board_log`` of a result (None: an agent that sent none)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ProtocolError(f"{where}.board_log: expected an object, got {str(raw)[:200]}")
    return BoardLog(
        _excerpt(raw.get("kernel"), f"{where}.board_log.kernel"),
        _excerpt(raw.get("runtime"), f"{where}.board_log.runtime"),
    )


def _excerpt(raw: Any, where: str) -> LogExcerpt:
    if raw is None:
        return LogExcerpt("absent", why="the agent did not read it")
    if not isinstance(raw, dict) or not isinstance(raw.get("source"), str):
        raise ProtocolError(f"{where}: expected an object with a source, got {str(raw)[:200]}")
    lines = raw.get("lines") or []
    if (
        not isinstance(lines, list)
        or len(lines) > MAX_LOG_LINES
        or not all(isinstance(x, str) for x in lines)
    ):
        raise ProtocolError(f"{where}.lines: expected at most {MAX_LOG_LINES} strings")
    numbers = {k: raw.get(k) or 0 for k in ("dropped", "lost")}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in numbers.values()):
        raise ProtocolError(f"{where}: dropped and lost must be counts: {numbers!r}")
    level = raw.get("level")
    env = raw.get("env")
    return LogExcerpt(
        raw["source"],
        tuple(lines),
        str(raw.get("why") or ""),
        numbers["dropped"],
        numbers["lost"],
        level if isinstance(level, int) and not isinstance(level, bool) else None,
        env if isinstance(env, str) else None,
    )
