"""The processes a simulated farm starts: spawning them detached, recognising them later, and
stopping them and everything they started.

A farm outlives the command that started it, so it is stopped from a *record* (pid, command
line, start time) rather than a ``Popen``. A pid can be reused by an unrelated process once ours
is gone; a record therefore matches only while ``/proc/<pid>`` shows the same start time and a
command line that still contains the recorded one (sshd rewrites its title to
``sshd: <argv> [listener] ...``, which keeps the original words), and nothing is signalled
unless it matches.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from typing_extensions import TypedDict

from npu_hil.harness.procstat import proc_stat
from npu_hil_testkit.simfarm.errors import SimFarmError

__all__ = [
    "ProcessRecord",
    "ProcessState",
    "StopResult",
    "free_port",
    "is_listening",
    "process_state",
    "record_process",
    "spawn",
    "stop_popen",
    "stop_records",
    "wait_until",
]

ProcessState = Literal["running", "stopped", "replaced"]
"""``running``: ours and alive; ``stopped``: gone (or a zombie); ``replaced``: the pid now
belongs to another process."""

POLL_S = 0.02
# How long a just-started process may take to show its command line (exec still under way).
CMDLINE_WAIT_S = 0.5


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the kernel's choice); the caller binds it soon."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def is_listening(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.settimeout(timeout)
        return probe.connect_ex((host, port)) == 0


def wait_until(
    ready: Callable[[], bool],
    process: subprocess.Popen[bytes],
    *,
    timeout: float,
    what: str,
    log: Path | None = None,
) -> None:
    """Poll ``ready`` until it holds; a process that exits first, or a deadline that passes,
    is a SimFarmError quoting the end of its log. The process is stopped on failure."""
    deadline = time.monotonic() + timeout
    while not ready():
        exited = process.poll() is not None
        if exited or time.monotonic() > deadline:
            stop_popen(process)
            why = (
                f"exited with status {process.returncode}" if exited else f"not within {timeout} s"
            )
            raise SimFarmError(f"{what}: {why}{_log_tail(log)}")
        time.sleep(POLL_S)


def start_listener(
    argv_for: Callable[[int], Sequence[str]],
    answers: Callable[[int], bool],
    *,
    what: str,
    log: Path,
    port: int | None,
    attempts: int,
    timeout: float,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start a server on ``port`` (``argv_for(port)`` writes what it needs and gives its
    command line) and wait until ``answers(port)``. Without a ``port`` a free one is taken, and
    another one if a different process took it between the choice and the bind (up to
    ``attempts``)."""
    last: SimFarmError | None = None
    for _ in range(1 if port is not None else max(1, attempts)):
        chosen = port if port is not None else free_port()
        process = spawn(argv_for(chosen), log=log)
        try:
            wait_until(
                functools.partial(answers, chosen),
                process,
                timeout=timeout,
                what=f"{what} on 127.0.0.1:{chosen}",
                log=log,
            )
        except SimFarmError as exc:
            last = exc
            continue
        return process, chosen
    assert last is not None
    raise last


def _log_tail(log: Path | None, lines: int = 5) -> str:
    if log is None:
        return ""
    try:
        text = log.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
    return f"; its log ({log}): " + " | ".join(text.splitlines()[-lines:]) if text else ""


def spawn(
    argv: Sequence[str],
    *,
    log: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own session (so it outlives the caller's terminal and its process
    group can be signalled as one), output appended to ``log``. Nothing of the caller's stdio is
    inherited: a caller that captures our output (a test running the CLI) must not wait for the
    farm to exit before it sees end-of-file."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as stream:
        try:
            return subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=stream,
                stderr=stream,
                cwd=cwd,
                env=None if env is None else dict(env),
                start_new_session=True,
            )
        except OSError as exc:
            raise SimFarmError(f"cannot start {argv[0]}: {exc}") from exc


# --- /proc --------------------------------------------------------------------------------------


def _cmdline(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.replace(b"\0", b" ").decode("utf-8", errors="replace").strip()


def _reap(pid: int) -> None:
    """Collect ``pid`` if it is our own child (a farm stopped by the process that started it),
    so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _alive(pid: int, start_time: int) -> bool:
    _reap(pid)
    stat = proc_stat(pid)
    return stat is not None and stat.start_time == start_time and stat.running


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = proc_stat(int(entry))
            if stat is not None:
                tree.setdefault(stat.ppid, []).append(int(entry))
    return tree


def _descendants(pid: int) -> list[tuple[int, int]]:
    """(pid, start time) of every process below ``pid``: sshd's per-connection processes and
    their shells, the console's board shell. They run in sessions of their own, so signalling
    the leader's process group alone would miss them."""
    tree = _children()
    out: list[tuple[int, int]] = []
    todo = list(tree.get(pid, ()))
    while todo:
        child = todo.pop()
        stat = proc_stat(child)
        if stat is not None:
            out.append((child, stat.start_time))
            todo.extend(tree.get(child, ()))
    return out


# --- records ------------------------------------------------------------------------------------


class ProcessDocument(TypedDict):
    """A started process in the farm's state file (:meth:`ProcessRecord.to_dict`)."""

    name: str
    pid: int
    argv: list[str]
    start_time: int
    port: int | None
    log: str | None


@dataclass(frozen=True)
class ProcessRecord:
    """A started process as the farm's state file keeps it. ``name`` says what it is
    (``sshd``, ``console:<board>``, ``ser2net:<board>``); ``port`` the TCP port it serves."""

    name: str
    pid: int
    argv: tuple[str, ...]
    start_time: int
    port: int | None = None
    log: str | None = None

    def to_dict(self) -> ProcessDocument:
        return {
            "name": self.name,
            "pid": self.pid,
            "argv": list(self.argv),
            "start_time": self.start_time,
            "port": self.port,
            "log": self.log,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProcessRecord:
        if not isinstance(data, Mapping):
            raise SimFarmError(f"a process record must be an object, got {data!r:.80}")
        try:
            port = data.get("port")
            log = data.get("log")
            record = cls(
                name=str(data["name"]),
                pid=int(data["pid"]),
                argv=tuple(str(a) for a in data["argv"]),
                start_time=int(data["start_time"]),
                port=None if port is None else int(port),
                log=None if log is None else str(log),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SimFarmError(f"a process record is malformed ({exc!r}): {dict(data)!r}") from None
        # Linux pids stop at 2**22 (pid_max): a larger one is no process, and 0 or -1 would
        # signal a whole group.
        if not 1 < record.pid <= 1 << 22 or not record.argv:
            raise SimFarmError(f"a process record is malformed: {dict(data)!r}")
        return record


def record_process(
    name: str, process: subprocess.Popen[bytes], *, port: int | None = None, log: Path | None = None
) -> ProcessRecord:
    stat = proc_stat(process.pid)
    if stat is None or process.poll() is not None:
        raise SimFarmError(f"{name} (pid {process.pid}) exited right after it started")
    argv = tuple(str(a) for a in process.args)  # type: ignore[union-attr]
    _await_command_line(process, " ".join(argv))
    return ProcessRecord(
        name=name,
        pid=process.pid,
        argv=argv,
        start_time=stat.start_time,
        port=port,
        log=None if log is None else str(log),
    )


def _await_command_line(process: subprocess.Popen[bytes], command: str) -> None:
    """Wait (briefly) until the kernel shows ``command`` as the process's command line: Popen
    returns once exec has begun, and for a moment after that ``/proc/PID/cmdline`` is still
    empty, which :func:`process_state` would read as another process under the same pid."""
    deadline = time.monotonic() + CMDLINE_WAIT_S
    while time.monotonic() < deadline and process.poll() is None:
        if command in (_cmdline(process.pid) or ""):
            return
        time.sleep(0.005)


def process_state(record: ProcessRecord) -> ProcessState:
    _reap(record.pid)
    stat = proc_stat(record.pid)
    if stat is None or not stat.running:
        return "stopped"
    command = _cmdline(record.pid)
    if stat.start_time != record.start_time or command is None:
        return "replaced"
    return "running" if " ".join(record.argv) in command else "replaced"


@dataclass(frozen=True)
class StopResult:
    """What ``stop_records`` did to one record: ``terminated`` (ended on SIGTERM), ``killed``
    (needed SIGKILL), ``survived`` (still there after SIGKILL), ``stopped`` (was already gone),
    ``replaced`` (the pid belongs to another process now: left alone)."""

    record: ProcessRecord
    outcome: Literal["terminated", "killed", "survived", "stopped", "replaced"]


def _signal(pid: int, start_time: int, signum: int, *, group: bool) -> None:
    if not _alive(pid, start_time):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        stat = proc_stat(pid)
        if group and stat is not None and stat.pgrp == pid:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)


def _wait_gone(procs: Iterable[tuple[int, int]], timeout: float) -> set[tuple[int, int]]:
    left = set(procs)
    deadline = time.monotonic() + timeout
    while left:
        left = {p for p in left if _alive(*p)}
        if not left or time.monotonic() > deadline:
            break
        time.sleep(POLL_S)
    return left


def stop_records(records: Sequence[ProcessRecord], timeout: float = 5.0) -> list[StopResult]:
    """SIGTERM every matching record's process group and descendants at once, SIGKILL what is
    left after ``timeout`` seconds. Records that no longer match are never signalled."""
    results: dict[int, StopResult] = {}
    families: dict[int, list[tuple[int, int]]] = {}
    for index, record in enumerate(records):
        state = process_state(record)
        if state != "running":
            results[index] = StopResult(record, state)
            continue
        # Collected before the leader dies: afterwards its children are re-parented and lost.
        families[index] = _descendants(record.pid)
        _signal(record.pid, record.start_time, signal.SIGTERM, group=True)
        for pid, start_time in families[index]:
            _signal(pid, start_time, signal.SIGTERM, group=False)
    everything = {
        proc
        for index, family in families.items()
        for proc in [(records[index].pid, records[index].start_time), *family]
    }
    left = _wait_gone(everything, timeout)
    for pid, start_time in left:
        _signal(pid, start_time, signal.SIGKILL, group=True)
    still = _wait_gone(left, 2.0) if left else set()
    for index in families:
        record = records[index]
        leader = (record.pid, record.start_time)
        outcome: Literal["terminated", "killed", "survived"] = (
            "survived" if leader in still else "killed" if leader in left else "terminated"
        )
        results[index] = StopResult(record, outcome)
    return [results[i] for i in range(len(records))]


def stop_popen(process: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    """Stop a process this caller started (its own session, see :func:`spawn`): SIGTERM to the
    group, SIGKILL after ``timeout``."""
    if process.poll() is not None:
        return
    _signal_popen(process, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        _signal_popen(process, signal.SIGKILL)
        process.wait(timeout)


def _signal_popen(process: subprocess.Popen[bytes], signum: int) -> None:
    # The group only when the process leads one of its own: never the caller's group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(process.pid) == process.pid:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
