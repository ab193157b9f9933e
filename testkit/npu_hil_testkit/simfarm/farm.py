"""A farm in a box: simulated boards behind a real sshd and serial consoles on 127.0.0.1.

``up`` starts one sshd for every SSH board (each board has its own workdir), one socat console
per serial board (plus one ser2net per board for ``rfc2217``), writes ``inventory.yaml`` to reach
them and ``state.json`` to stop them. The processes run in sessions of their own and outlive the
command that started them; ``down`` stops them from the state file, ``status`` reports on them.

Folder layout::

    DIR/state.json  inventory.yaml  .lock
    DIR/bin/python3                         the boards' Python (see simfarm.inventory)
    DIR/ssh/{host,client}_ed25519  known_hosts  sshd_config  sshd.log
    DIR/boards/<name>/work                  a board's workdir
    DIR/boards/<name>/tty                   a serial board's console device (and its logs)

Keys and board workdirs stay after ``down``: the next ``up`` keeps the same host key, and the
agent bundles already deployed to the workdirs.
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from npu_hil.harness.board.kernlog import KMSG_ENV
from npu_hil.harness.codec import known_targets
from npu_hil.harness.errors import UnsafeFolderError
from npu_hil.harness.folders import private_dir, user_folder
from npu_hil_testkit.simfarm.console import (
    require_ser2net,
    require_socat,
    start_ser2net,
    start_serial_board,
)
from npu_hil_testkit.simfarm.errors import SimFarmError
from npu_hil_testkit.simfarm.inventory import (
    checkout_manifest,
    harness_root,
    write_inventory,
    write_python_wrapper,
)
from npu_hil_testkit.simfarm.procs import (
    ProcessRecord,
    ProcessState,
    StopResult,
    process_state,
    record_process,
    stop_records,
)
from npu_hil_testkit.simfarm.sshd import login_user, require_openssh, start_sshd
from npu_hil_testkit.simfarm.state import (
    FarmBoard,
    FarmState,
    load_state,
    remove_state,
    save_state,
)

__all__ = [
    "SERIAL_MODES",
    "TRANSPORTS",
    "FarmStatus",
    "default_dir",
    "down",
    "plan_boards",
    "status",
    "up",
]

TRANSPORTS = ("ssh", "serial")
SERIAL_MODES = ("pty", "rfc2217")
INVENTORY_FILE = "inventory.yaml"
BAUDRATE = 115200
MAX_BOARDS = 64
"""Boards per target and transport: each is a workdir and a login (a serial one a console
process); more than a host can serve is refused before the lock is taken."""
# A console board reboots when its shell dies; bound it, but far above what a nightly needs.
CONSOLE_BOOTS = 1000


def default_dir() -> Path:
    """``npu-hil-simfarm`` in this user's runtime or cache folder: stable, so ``down`` and
    ``status`` find the farm without arguments, and no other user's to pre-create."""
    return user_folder() / "npu-hil-simfarm"


def _prepare_dir(folder: Path) -> None:
    # The farm's keys, sshd and agents live here: it must be a real folder of ours that nobody
    # else can write, or another user could hand us their keys, their code or a symlink.
    try:
        private_dir(folder)
    except UnsafeFolderError as exc:
        raise SimFarmError(f"{exc.message}; use --dir") from None


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One ``up`` or ``down`` at a time per folder."""
    with (folder / ".lock").open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SimFarmError(
                f"{folder}: another simfarm up/down is working on this farm right now"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _check_targets(targets: Sequence[str] | None) -> list[str]:
    known = known_targets()
    if targets is None:
        return list(known)
    chosen: list[str] = []
    for target in targets:
        if target not in known:
            close = difflib.get_close_matches(target, known, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise SimFarmError(
                f"unknown target {target!r}{hint}; known targets: {', '.join(known)}"
            )
        if target not in chosen:
            chosen.append(target)
    if not chosen:
        raise SimFarmError("expected at least one target")
    return chosen


def _check_transports(transports: Sequence[str]) -> list[str]:
    chosen: list[str] = []
    for transport in transports:
        if transport not in TRANSPORTS:
            raise SimFarmError(
                f"unknown transport {transport!r}; expected some of {', '.join(TRANSPORTS)}"
            )
        if transport not in chosen:
            chosen.append(transport)
    if not chosen:
        raise SimFarmError(f"expected at least one transport ({', '.join(TRANSPORTS)})")
    return chosen


def plan_boards(
    targets: Sequence[str], boards: int, transports: Sequence[str]
) -> list[tuple[str, str, str]]:
    """(name, target, transport) for ``boards`` boards per target and transport, named like
    ``rk3588-ssh-01``."""
    return [
        (f"{target}-{transport}-{index:02d}", target, transport)
        for target in targets
        for transport in transports
        for index in range(1, boards + 1)
    ]


def _running(state: FarmState) -> list[ProcessRecord]:
    return [record for record in state.processes if process_state(record) == "running"]


def up(
    folder: Path | None = None,
    *,
    boards: int = 1,
    targets: Sequence[str] | None = None,
    transports: Sequence[str] = ("ssh",),
    serial: str = "pty",
) -> FarmState:
    """Start a farm in ``folder`` (default :func:`default_dir`): ``boards`` boards per target
    (default: every target the codec knows) and transport. Refuses a folder whose farm is
    still running; a recorded farm whose processes are all gone is replaced. On any failure
    whatever was started is stopped again before the error propagates."""
    if not 1 <= boards <= MAX_BOARDS:
        raise SimFarmError(
            f"expected 1 to {MAX_BOARDS} boards per target and transport, got {boards}"
        )
    if serial not in SERIAL_MODES:
        raise SimFarmError(f"serial console {serial!r}: expected one of {', '.join(SERIAL_MODES)}")
    chosen_targets = _check_targets(targets)
    chosen_transports = _check_transports(transports)
    # Every program checked before anything starts: a missing ser2net must not leave an sshd.
    if "ssh" in chosen_transports:
        require_openssh()
    if "serial" in chosen_transports:
        require_socat()
        if serial == "rfc2217":
            require_ser2net()
    root = (folder or default_dir()).absolute()
    _prepare_dir(root)
    with _locked(root):
        existing = load_state(root)
        if existing is not None:
            alive = _running(existing)
            if alive:
                names = ", ".join(f"{r.name} (pid {r.pid})" for r in alive[:3])
                more = f" and {len(alive) - 3} more" if len(alive) > 3 else ""
                raise SimFarmError(
                    f"{root}: a simulated farm is already up ({names}{more}); its inventory is "
                    f"{existing.inventory}; stop it first with: npu-hil simfarm down --dir {root}"
                )
            remove_state(root)
        state = FarmState(
            dir=root,
            inventory=root / INVENTORY_FILE,
            user=login_user(),
            started=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        try:
            return _start(state, plan_boards(chosen_targets, boards, chosen_transports), serial)
        except BaseException:
            # The partial state on disk names what was started; stop exactly that.
            partial = load_state(root)
            if partial is not None:
                stop_records(partial.processes)
            remove_state(root)
            (root / INVENTORY_FILE).unlink(missing_ok=True)
            raise


def _start(state: FarmState, plan: list[tuple[str, str, str]], serial: str) -> FarmState:
    root = state.dir
    (root / INVENTORY_FILE).unlink(missing_ok=True)  # never leave a stale one in view
    write_python_wrapper(root / "bin" / "python3")
    entries: list[dict[str, Any]] = []
    farm_boards: list[FarmBoard] = []

    def board_entry(name: str, target: str, kind: str, transport: dict[str, Any]) -> None:
        workdir = private_dir(root / "boards" / name / "work")
        # Each board's own kernel log, which its simulated runtime writes and its agent reads.
        kmsg = root / "boards" / name / "root" / "dev" / "kmsg"
        board_python = write_python_wrapper(
            root / "boards" / name / "bin" / "python3", env={KMSG_ENV: str(kmsg)}
        )
        entries.append(
            {
                "name": name,
                "target": target,
                "backend": "hw",
                "adapter": "sim",
                "tags": ["simfarm", kind],
                "python": str(board_python),
                "workdir": str(workdir),
                "transport": transport,
            }
        )
        address = f"127.0.0.1:{transport['port']}" if kind == "ssh" else str(transport["port"])
        farm_boards.append(FarmBoard(name, target, kind, address, str(workdir)))

    if any(kind == "ssh" for _, _, kind in plan):
        ssh_root = root / "ssh"
        # Logins get the harness on PYTHONPATH too, not only through the python wrapper.
        process, sshd = start_sshd(ssh_root, env={"PYTHONPATH": str(harness_root())})
        state = state.with_process(record_process("sshd", process, port=sshd.port, log=sshd.log))
        save_state(state)
        known_hosts = ssh_root / "known_hosts"
        known_hosts.write_text(sshd.known_hosts_line(), encoding="utf-8")
        for name, target, kind in plan:
            if kind == "ssh":
                board_entry(
                    name,
                    target,
                    kind,
                    {
                        "kind": "ssh",
                        "host": sshd.host,
                        "port": sshd.port,
                        "user": sshd.user,
                        "key_file": str(sshd.client_key),
                        "host_key_policy": "strict",
                        "known_hosts": str(known_hosts),
                    },
                )
    for name, target, kind in plan:
        if kind != "serial":
            continue
        board_root = root / "boards" / name
        console = start_serial_board(board_root, boots=CONSOLE_BOOTS)
        state = state.with_process(
            record_process(f"console:{name}", console.process, log=console.log)
        )
        save_state(state)
        port: str = str(console.tty)
        if serial == "rfc2217":
            served = start_ser2net(console.tty, board_root, baudrate=BAUDRATE)
            state = state.with_process(
                record_process(
                    f"ser2net:{name}",
                    served.process,
                    port=served.port,
                    log=board_root / "ser2net.log",
                )
            )
            save_state(state)
            port = served.url
        board_entry(name, target, kind, {"kind": "serial", "port": port, "baudrate": BAUDRATE})
    # Boards in plan order (target by target), whatever order their processes started in.
    order = {name: index for index, (name, _, _) in enumerate(plan)}
    entries.sort(key=lambda entry: order[entry["name"]])
    farm_boards.sort(key=lambda board: order[board.name])
    write_inventory(state.inventory, entries, manifest=checkout_manifest())
    state = replace(state, boards=tuple(farm_boards), complete=True)
    save_state(state)
    return state


@dataclass(frozen=True)
class FarmStatus:
    """A recorded farm and the state of each of its processes."""

    state: FarmState
    processes: tuple[tuple[ProcessRecord, ProcessState], ...]

    @property
    def running(self) -> bool:
        """Every process of a completely started farm is alive."""
        return self.state.complete and all(s == "running" for _, s in self.processes)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.state.to_dict(),
            "running": self.running,
            "processes": [{**record.to_dict(), "state": state} for record, state in self.processes],
        }


def status(folder: Path | None = None) -> FarmStatus | None:
    """The farm recorded in ``folder`` (default :func:`default_dir`), or None."""
    state = load_state((folder or default_dir()).absolute())
    if state is None:
        return None
    return FarmStatus(state, tuple((r, process_state(r)) for r in state.processes))


def down(folder: Path | None = None, *, timeout: float = 5.0) -> list[StopResult]:
    """Stop every recorded process that is still ours (SIGTERM to its group and everything
    below it, SIGKILL after ``timeout``) and forget the farm. A pid that now belongs to another
    process is left alone. Nothing recorded: nothing to do, an empty list."""
    root = (folder or default_dir()).absolute()
    if not root.is_dir():
        return []
    with _locked(root):
        state = load_state(root)
        if state is None:
            return []
        results = stop_records(state.processes, timeout)
        survivors = [r.record for r in results if r.outcome == "survived"]
        if survivors:
            names = ", ".join(f"{r.name} (pid {r.pid})" for r in survivors)
            raise SimFarmError(f"{root}: still running after SIGKILL: {names}; state kept")
        remove_state(root)
        state.inventory.unlink(missing_ok=True)
        return results
