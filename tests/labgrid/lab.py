"""A labgrid lab on 127.0.0.1: a real ``labgrid-coordinator`` and ``labgrid-exporter`` (free ports,
temporary folders) exporting simulated boards of :mod:`npu_hil_testkit.simfarm`:

- ``rk3588-ssh-01``: a ``NetworkService`` for the farm's sshd and a ``NetworkPowerPort`` (labgrid's
  ``simplerest`` model) switched by a small HTTP power switch on 127.0.0.1;
- ``rk3588-serial-01``: a ``RawSerialPort`` on the farm's pty console, which the exporter turns
  into a ``NetworkSerialPort`` served by ser2net (RFC 2217) while the place is acquired;
- ``kl730-raw-01``: a ``NetworkSerialPort`` with ``protocol: raw`` for a console that ser2net
  serves as plain TCP (a terminal server).

The places are made with ``labgrid-client``, the way a farm engineer makes them. Everything is
skipped only when labgrid itself is not installed (or a program the simulated boards need).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from npu_hil_testkit.simfarm import FarmState
from npu_hil_testkit.simfarm.console import require_ser2net, start_serial_board, stop_serial_board
from npu_hil_testkit.simfarm.procs import free_port, is_listening, spawn, stop_popen, wait_until

EXPORTER = "npu-exporter"
SSH_PLACE = "rk3588-ssh-01"
SERIAL_PLACE = "rk3588-serial-01"
RAW_PLACE = "kl730-raw-01"


def as_foreground(command: Sequence[str]) -> list[str]:
    """``command`` with SIGINT, SIGTERM and SIGHUP at their defaults, as a terminal's foreground
    job finds them, for a process the tests stop with one of them. A process inherits an ignored
    signal (``nohup`` ignores SIGHUP; a script's background job, or a CI runner that starts jobs
    so, ignores SIGINT), and the harness rightly leaves an ignored signal alone: the test would
    wait on a process that does what it was told. Reset in a process that then execs, not in
    ``preexec_fn``: Python code between fork and exec crashes beside grpc's threads."""
    reset = (
        "import os, signal as s, sys\n"
        "for n in (s.SIGINT, s.SIGTERM, s.SIGHUP): s.signal(n, s.SIG_DFL)\n"
    )
    return [sys.executable, "-c", reset + "os.execv(sys.argv[1], sys.argv[1:])", *command]


COLLEAGUE = {"LG_HOSTNAME": "desk-7", "LG_USERNAME": "colleague"}


def labgrid_tool(name: str) -> str:
    """A labgrid program of this interpreter's environment (tox does not put it on PATH)."""
    pytest.importorskip(
        "labgrid", reason="labgrid is not installed (pip install 'npu-hil[labgrid]')"
    )
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


class PowerSwitch:
    """A network power switch speaking what labgrid's ``simplerest`` model sends: ``GET
    /relay/<index>/<0|1>`` switches, ``GET /relay/<index>`` answers ``0`` or ``1``."""

    def __init__(self) -> None:
        self.state: dict[int, int] = {}
        self.requests: list[str] = []
        switch = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                switch.requests.append(self.path)
                parts = [p for p in self.path.split("/") if p]
                if len(parts) == 3 and parts[0] == "relay":
                    switch.state[int(parts[1])] = int(parts[2])
                    body = b"ok"
                elif len(parts) == 2 and parts[0] == "relay":
                    body = str(switch.state.get(int(parts[1]), 0)).encode()
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/relay/{{index}}/{{value}}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Observer:
    """A labgrid client of the tests' own, straight on labgrid's ``ClientSession`` (not the
    harness's wrapper under test): creates the places and watches the
    coordinator's state."""

    def __init__(self, address: str) -> None:
        from labgrid.remote.client import ClientSession

        from npu_hil.harness.labgrid.coordinator import own_connection

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def start() -> Any:
            session = ClientSession(address, self.loop)
            own_connection(session)  # beside the harness's session in this process
            await session.start()
            return session

        self.session = self._run(start())

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def acquired_by(self, place: str) -> str | None:
        async def look() -> str | None:
            await self.session.sync_with_coordinator()
            return self.session.places[place].acquired  # type: ignore[no-any-return]

        return self._run(look())  # type: ignore[no-any-return]

    def reservations(self) -> list[tuple[dict[str, str], str, str]]:
        """Every reservation's filter, state and token."""
        from labgrid.remote.common import Reservation
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        async def fetch() -> list[tuple[dict[str, str], str, str]]:
            reply = await self.session.stub.GetReservations(pb.GetReservationsRequest())
            found = [Reservation.from_pb2(r) for r in reply.reservations]
            return [(dict(r.filters["main"]), r.state.name, r.token) for r in found]

        return self._run(fetch())  # type: ignore[no-any-return]

    def has_resources(self, exporter: str, groups: Sequence[str]) -> bool:
        async def look() -> bool:
            await self.session.sync_with_coordinator()
            published = self.session.resources.get(exporter, {})
            return all(published.get(group) for group in groups)

        return self._run(look())  # type: ignore[no-any-return]

    def create_place(self, name: str, match: str, tags: dict[str, str]) -> None:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        async def create() -> None:
            stub = self.session.stub
            await stub.AddPlace(pb.AddPlaceRequest(name=name))
            await stub.AddPlaceMatch(pb.AddPlaceMatchRequest(placename=name, pattern=match))
            await stub.SetPlaceTags(pb.SetPlaceTagsRequest(placename=name, tags=tags))
            await self.session.sync_with_coordinator()

        self._run(create())

    def close(self) -> None:
        async def stop() -> None:
            await self.session.stop()
            await self.session.close()

        with contextlib.suppress(Exception):
            self._run(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@dataclass
class Lab:
    """The running lab and how to talk to it as a user would."""

    address: str  # the coordinator, host:port
    root: Path
    farm: FarmState
    power: PowerSwitch
    client_bin: str
    observer: Observer
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def client(
        self, *args: str, env: dict[str, str] | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """``labgrid-client -x <coordinator> ARGS`` (as ``env``'s identity when given)."""
        done = subprocess.run(
            [self.client_bin, "-x", self.address, *args],
            env={**os.environ, **(env or {})},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"labgrid-client {' '.join(args)} failed ({done.returncode}): "
                f"{done.stdout}{done.stderr}"
            )
        return done

    def acquired_by(self, place: str) -> str | None:
        """Who holds the place (``host/user``), None when nobody."""
        return self.observer.acquired_by(place)

    def who(self) -> str:
        """``labgrid-client who``: the independent view of who holds what."""
        return self.client("who").stdout

    def wait_released(self, place: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while self.acquired_by(place) is not None:
            assert time.monotonic() < deadline, f"{place} still acquired"
            time.sleep(0.05)

    def reservations(self) -> list[tuple[dict[str, str], str]]:
        """Every reservation's filter and state."""
        return [(filters, state) for filters, state, _ in self.observer.reservations()]

    def reserved(self, place: str) -> bool:
        return any(f.get("name") == place for f, _ in self.reservations())

    def cancel_reservations(self, places: Sequence[str]) -> list[str]:
        """Cancel what still reserves any of ``places`` (a test that failed left it); the places
        that were reserved."""
        stale = [
            (f["name"], t) for f, _, t in self.observer.reservations() if f.get("name") in places
        ]
        for _, token in stale:
            self.client("cancel-reservation", token, check=False)
        return sorted({name for name, _ in stale})

    def board(self, name: str) -> str:
        return next(b.address for b in self.farm.boards if b.name == name)


def exporter_config(farm: FarmState, power: PowerSwitch, raw_port: int) -> str:
    ssh = next(b for b in farm.boards if b.transport == "ssh")
    serial = next(b for b in farm.boards if b.transport == "serial")
    host, port = ssh.address.rsplit(":", 1)
    # The exporter hands ser2net a /dev path (labgrid checks that it starts with /dev/): the
    # pty itself, not the farm's symlink to it.
    tty = os.path.realpath(serial.address)
    return (
        f"{SSH_PLACE}:\n"
        "  NetworkService:\n"
        f"    address: {host}\n"
        f"    username: {farm.user}\n"
        f"    port: {port}\n"
        "  NetworkPowerPort:\n"
        "    model: simplerest\n"
        f"    host: '{power.url}'\n"
        "    index: 0\n"
        f"{SERIAL_PLACE}:\n"
        "  RawSerialPort:\n"
        f"    port: {tty}\n"
        "    speed: 115200\n"
        f"{RAW_PLACE}:\n"
        "  NetworkSerialPort:\n"
        "    host: 127.0.0.1\n"
        f"    port: {raw_port}\n"
        "    protocol: raw\n"
        "    speed: 115200\n"
    )


def raw_console(root: Path) -> tuple[list[subprocess.Popen[bytes]], int]:
    """A second fake board whose console ser2net serves as plain TCP on 127.0.0.1."""
    board = start_serial_board(root / "raw-board")
    port = free_port()
    config = root / "raw-board" / "ser2net.yaml"
    config.write_text(
        "connection: &raw\n"
        f"  accepter: tcp,127.0.0.1,{port}\n"
        "  enable: on\n"
        f"  connector: serialdev,{board.tty},115200n81,local\n",
        encoding="utf-8",
    )
    log = root / "raw-board" / "ser2net.log"
    served = spawn(
        [require_ser2net(), "-n", "-c", str(config), "-P", str(root / "raw-board" / "pid")],
        log=log,
    )
    try:
        wait_until(lambda: is_listening(port), served, timeout=10, what="ser2net (raw)", log=log)
    except BaseException:
        stop_serial_board(board.process)
        raise
    return [served, board.process], port


def wait_for_resources(lab: Lab, groups: Sequence[str], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not lab.observer.has_resources(EXPORTER, groups):
        if time.monotonic() > deadline:
            raise AssertionError(f"the exporter did not publish {groups} within {timeout} s")
        time.sleep(0.1)


def stop_all(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    for process in reversed(processes):
        with contextlib.suppress(Exception):
            stop_popen(process)


def labgrid_inventory(
    lab: Lab,
    path: Path,
    *,
    wait: float = 30.0,
    places: Sequence[str] = (SSH_PLACE,),
    fallback: str = "none",
) -> Path:
    """An inventory whose boards are the lab's places: the simulated runtime (``adapter: sim``)
    behind the labgrid-exported sshd and console, as a farm engineer would describe real boards
    apart from the adapter."""
    farm = lab.farm
    python = farm.dir / "bin" / "python3"
    entries = "".join(
        f"    - {{place: {place}, adapter: sim, python: {python}, "
        f"workdir: {farm.dir / 'boards' / place / 'work'}}}\n"
        for place in places
    )
    path.write_text(
        f"defaults: {{fallback: {fallback}}}\n"
        "labgrid:\n"
        f"  coordinator: {lab.address}\n"
        "  places:\n"
        f"{entries}"
        f"  wait: {wait}\n"
        "  ssh:\n"
        f"    key_file: {farm.dir / 'ssh' / 'client_ed25519'}\n"
        f"    known_hosts: {farm.dir / 'ssh' / 'known_hosts'}\n",
        encoding="utf-8",
    )
    return path
