"""Every transport setting's default and check, written once, so a setting cannot mean one thing
in the inventory and another in the transport."""

from __future__ import annotations

import difflib
import json
from typing import Literal

HostKeyPolicy = Literal["strict", "accept-new"]
HOST_KEY_POLICIES: tuple[HostKeyPolicy, ...] = ("strict", "accept-new")
"""``strict``: a host key no known_hosts file has is refused; ``accept-new``: it is recorded in
the harness's own known_hosts. A changed key is refused under both."""

SSH_PORT = 22
# The console speed of most boards' debug UARTs (some run at 1500000: an inventory says so).
BAUDRATE = 115200
BAUDRATES = (
    300,
    600,
    1200,
    2400,
    4800,
    9600,
    19200,
    38400,
    57600,
    115200,
    230400,
    460800,
    500000,
    576000,
    921600,
    1000000,
    1152000,
    1500000,
    2000000,
    2500000,
    3000000,
    3500000,
    4000000,
)
"""The rates a serial port (termios) can be set to: what an inventory may name."""

BOARD_PYTHON = "python3"
"""The interpreter the agent runs under on a board whose inventory names none."""
BOARD_WORKDIR = "/tmp/npu-hil"
"""Where the agent, the model cache and the jobs live on a board whose inventory names no
workdir: a tmpfs on most boards, so a reboot leaves nothing behind."""


def check_host_key_policy(value: str) -> HostKeyPolicy:
    """``value`` as a host key policy; ValueError saying what was expected otherwise."""
    if value not in HOST_KEY_POLICIES:
        close = difflib.get_close_matches(str(value), HOST_KEY_POLICIES, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        # Quoted as the inventory's messages quote what came (JSON: escaped, double quotes).
        got = f"got {json.dumps(value)}{hint}"
        raise ValueError(f"host_key_policy: expected one of {', '.join(HOST_KEY_POLICIES)}, {got}")
    return value
