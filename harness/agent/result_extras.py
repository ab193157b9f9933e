"""The parts of result.json beside the tensors, read and checked on the host: ``canary`` (what the
agent filled with the job's canary pattern before the run) and ``board_state`` (the board's
clocks, governors, temperatures and load around the timed runs). :mod:`harness.agent.protocol`
reads the rest of the result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from npu_hil.harness.errors import ProtocolError

__all__ = ["Canary", "read_board_state", "read_canary"]


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


def read_board_state(raw: Any, where: str) -> dict[str, Any]:
    """The checked ``board_state`` object of a result ({} when the agent sent none)."""
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
