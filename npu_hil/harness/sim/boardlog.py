"""A simulated board's own logs for the log faults (docs/runtime/agent.md, "Faults"): the lines
a real board logs (:func:`npu_hil.targets.log_signatures.fault_lines`), kernel records appended to
the board's fake kmsg (``NPU_HIL_KMSG``, never the real ``/dev/kmsg``), runtime lines on stderr; at
``NPU_HIL_SIM_LOG_LEVEL`` 3 or more its loads and runs too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

from npu_hil.harness.board.kernlog import REAL_KMSG, kmsg_path, parse_record
from npu_hil.harness.sim.faults import LOG_FAULTS, Fault
from npu_hil.harness.simkit.errors import SimConfigError, SimRefusal
from npu_hil.targets.log_signatures import fault_lines

__all__ = ["SIM_LOG_LEVEL_ENV", "apply_log_fault", "runtime_info"]

SIM_LOG_LEVEL_ENV = "NPU_HIL_SIM_LOG_LEVEL"
INFO_LEVEL = 3
STAGE = {"npu-timeout": "run", "oom-kill": "run", "bad-model-version": "load"}
FAILURE = {
    "npu-timeout": "the NPU job did not complete before the driver's timeout",
    "oom-kill": "out of memory: the runtime's buffers could not be allocated",
    "bad-model-version": "the runtime refused the model: its version is not one this runtime reads",
}
KERNEL_PRI = 3  # LOG_ERR, facility kernel


def runtime_info(message: str) -> None:
    """An informational runtime line, written only at the info level or above."""
    try:
        level = int(os.environ.get(SIM_LOG_LEVEL_ENV) or "0")
    except ValueError:
        level = 0
    if level >= INFO_LEVEL:
        _stderr([f"I sim: {message}"])


def apply_log_fault(faults: Iterable[Fault], target: str, stage: str) -> None:
    """The first log fault of ``faults`` for ``stage`` (``load`` or ``run``): its lines logged,
    then the stage fails as the runtime's DeviceError."""
    for fault in faults:
        name = fault.name
        if name not in LOG_FAULTS or STAGE[name] != stage:
            continue
        lines = fault_lines(target, name)
        if not lines["kernel"] and not lines["runtime"]:
            raise SimConfigError(
                f"fault {name}: no log signature of {target}'s tables names it, so a board of "
                f"{target} has nothing to log for it"
            )
        if lines["kernel"]:
            append_kernel(lines["kernel"])
        if lines["runtime"]:
            _stderr(lines["runtime"])
        raise SimRefusal("DeviceError", stage, FAILURE[name])


def append_kernel(messages: list[str]) -> None:
    """Append kernel records to the simulated board's kernel log."""
    path = kmsg_path()
    if os.path.realpath(path) == REAL_KMSG:
        raise SimConfigError(
            f"a log fault writes the simulated board's kernel log, and {path} is this machine's: "
            f"set NPU_HIL_KMSG to the board's own file"
        )
    seq = _next_seq(path)
    usec = int(time.monotonic() * 1e6)
    records = "".join(
        f"{KERNEL_PRI},{seq + i},{usec + i},-;{message}\n" for i, message in enumerate(messages)
    )
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(records)


def _next_seq(path: str) -> int:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 4096))
            tail = handle.read().decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return 0
    for line in reversed(tail):
        record = parse_record(line)
        if record is not None:
            return int(record["seq"]) + 1
    return 0


def _stderr(lines: list[str]) -> None:
    os.write(2, "".join(f"{line}\n" for line in lines).encode("utf-8"))
