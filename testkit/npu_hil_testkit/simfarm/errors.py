"""The simulated farm's errors: one type for everything that keeps a farm from starting or
stopping, and a subtype for a missing program so callers (a test session) can tell "not
installed here" from "installed but broken"."""

from __future__ import annotations

from npu_hil.harness.errors import NpuHilError

__all__ = ["MissingToolError", "SimFarmError"]


class SimFarmError(NpuHilError):
    """A simulated farm that cannot be brought up, stopped or read: the message says which
    process or file and why."""


class MissingToolError(SimFarmError):
    """A program the farm needs (sshd, ssh-keygen, socat, ser2net) is not installed."""

    def __init__(self, tool: str, package: str) -> None:
        super().__init__(f"{tool} is not installed (apt-get install {package})")
        self.tool = tool
        self.package = package
