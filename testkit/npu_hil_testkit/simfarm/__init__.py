"""Simulated boards behind real transports on 127.0.0.1: a real OpenSSH sshd, serial consoles
on pseudo-terminals (socat) and RFC 2217 (ser2net).

:mod:`~npu_hil_testkit.simfarm.farm` brings a whole farm up and down (``npu-hil simfarm``);
:mod:`~npu_hil_testkit.simfarm.sshd` and :mod:`~npu_hil_testkit.simfarm.console` start the single
pieces, which the transport tests use directly.
"""

from __future__ import annotations

from npu_hil_testkit.simfarm.console import (
    BOARD_SCRIPT,
    Ser2net,
    SerialBoard,
    start_ser2net,
    start_serial_board,
    stop_serial_board,
)
from npu_hil_testkit.simfarm.errors import MissingToolError, SimFarmError
from npu_hil_testkit.simfarm.farm import FarmStatus, default_dir, down, plan_boards, status, up
from npu_hil_testkit.simfarm.inventory import harness_root, write_python_wrapper
from npu_hil_testkit.simfarm.procs import ProcessRecord, StopResult, free_port, process_state
from npu_hil_testkit.simfarm.sshd import Sshd, fingerprint, keygen, start_sshd, stop_sshd
from npu_hil_testkit.simfarm.state import FarmBoard, FarmState, load_state

__all__ = [
    "BOARD_SCRIPT",
    "FarmBoard",
    "FarmState",
    "FarmStatus",
    "MissingToolError",
    "ProcessRecord",
    "Ser2net",
    "SerialBoard",
    "SimFarmError",
    "Sshd",
    "StopResult",
    "default_dir",
    "down",
    "fingerprint",
    "free_port",
    "harness_root",
    "keygen",
    "load_state",
    "plan_boards",
    "process_state",
    "start_ser2net",
    "start_serial_board",
    "start_sshd",
    "status",
    "stop_serial_board",
    "stop_sshd",
    "up",
    "write_python_wrapper",
]
