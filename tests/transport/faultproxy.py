"""A TCP proxy on 127.0.0.1 that injects faults: the fault injection for the SSH tests.

Threads, not asyncio, so a test can drive it synchronously. Each connection is two pipes
("up": client to server, "down": server to client), each a reader thread and a writer thread
joined by a bounded queue: the queue is a delay line for latency, and its bound keeps TCP's
backpressure (a stalled pipe stops the sender instead of buffering the whole stream).

Faults, all counted in bytes of one direction from the moment they are armed:

- ``cut_after(n)`` / ``cut_now()``: every open connection is reset (a pulled cable); new ones
  are served normally, so a transport can reconnect.
- ``latency(s)``: every chunk is forwarded ``s`` seconds after it arrived.
- ``stall_after(n, s)``: the stream stops for ``s`` seconds at that byte.
- ``corrupt_after(n)``: one bit of that byte is flipped; ``corrupt_rate(p)``: each byte is
  flipped with probability ``p`` (seeded, reproducible).
- ``refuse_for(s)``: a board that reboots: connections are reset and the port refuses new ones
  for ``s`` seconds, then accepts again.

``every=True`` re-arms a stall or a flip on each new connection (``n`` counted from its start),
so a transport that reconnects meets it again: the way to exhaust its retries.
"""

from __future__ import annotations

import contextlib
import math
import queue
import random
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

Direction = Literal["up", "down"]
_CHUNK = 65536


@dataclass
class _Trigger:
    """A fault at a byte offset: the bytes to go before it, shared by the pipes of its
    direction, or counted per pipe when it is re-armed on ``every`` connection."""

    kind: Literal["cut", "stall", "flip"]
    direction: Direction
    nbytes: int
    every: bool
    seconds: float = 0.0
    shared: int = 0
    per_pipe: dict[int, int] = field(default_factory=dict)
    done: set[int] = field(default_factory=set)  # pipes it already fired on (every=True)

    def __post_init__(self) -> None:
        self.shared = self.nbytes

    def remaining(self, pipe: int) -> int | None:
        if pipe in self.done:
            return None
        if not self.every:
            return self.shared
        return self.per_pipe.setdefault(pipe, self.nbytes)

    def advance(self, pipe: int, n: int) -> None:
        left = self.remaining(pipe)
        if left is None:
            return
        if self.every:
            self.per_pipe[pipe] = left - n
        else:
            self.shared = left - n


@dataclass
class _Stall:
    seconds: float


class _Cut:
    pass


class FaultProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1", *, seed: int = 1) -> None:
        self.target = (target_host, target_port)
        self._listener: socket.socket | None = self._listen(0)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._triggers: list[_Trigger] = []
        self._latency = 0.0
        self._rate: dict[Direction, float] = {"up": 0.0, "down": 0.0}
        self._rng = random.Random(seed)
        self._next_pipe = 0
        self.cuts = 0
        self.stalls = 0
        self.flips = 0
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    # --- arming faults ---------------------------------------------------------------------------

    def cut_after(self, nbytes: int, direction: Direction = "up") -> None:
        self._arm(_Trigger("cut", direction, nbytes, every=False))

    def cut_now(self) -> None:
        with self._lock:
            self._cut_locked()

    def latency(self, seconds: float) -> None:
        with self._lock:
            self._latency = seconds

    def stall_after(
        self, nbytes: int, seconds: float, direction: Direction = "down", *, every: bool = False
    ) -> None:
        self._arm(_Trigger("stall", direction, nbytes, every, seconds))

    def corrupt_after(
        self, nbytes: int, direction: Direction = "down", *, every: bool = False
    ) -> None:
        self._arm(_Trigger("flip", direction, nbytes, every))

    def corrupt_rate(self, rate: float, direction: Direction = "down") -> None:
        with self._lock:
            self._rate[direction] = rate

    def clear(self) -> None:
        """Disarm every fault (latency and corruption rates included)."""
        with self._lock:
            self._triggers.clear()
            self._latency = 0.0
            self._rate = {"up": 0.0, "down": 0.0}

    def refuse_for(self, seconds: float) -> None:
        """Reset every connection and refuse new ones for ``seconds``; returns at once."""
        with self._lock:
            self._cut_locked()
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        timer = threading.Timer(seconds, self._reopen)
        timer.daemon = True
        timer.start()

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            listener, self._listener = self._listener, None
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()
            self._sockets.clear()
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.close()
        self._thread.join(2)

    # --- connections -----------------------------------------------------------------------------

    @staticmethod
    def _listen(port: int) -> socket.socket:
        listener = socket.create_server(("127.0.0.1", port))  # SO_REUSEADDR: port reusable
        listener.settimeout(0.1)
        return listener

    def _reopen(self) -> None:
        deadline = time.monotonic() + 5
        while not self._stop.is_set():
            try:
                listener = self._listen(self.port)
                break
            except OSError:  # another socket holds the port for a moment
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        else:
            return
        with self._lock:
            if not self._stop.is_set():
                self._listener = listener
                return
        listener.close()  # closed while reopening

    def _arm(self, trigger: _Trigger) -> None:
        with self._lock:
            self._triggers.append(trigger)

    def _cut_locked(self) -> None:
        self._triggers = [t for t in self._triggers if t.kind != "cut"]
        self.cuts += 1
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                # RST rather than FIN: what a pulled cable or a rebooting board looks like.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        self._sockets.clear()

    def _accept(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                listener = self._listener
            if listener is None:  # refusing: the port is closed
                self._stop.wait(0.02)
                continue
            try:
                client, _ = listener.accept()
            except OSError:  # a timeout, or the listener closed under us
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            client.settimeout(None)
            for sock in (client, server):  # no Nagle: SSH's small round trips stay fast
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._sockets += [client, server]
                self.connections += 1
            self._pipe(client, server, "up")
            self._pipe(server, client, "down")

    # --- one direction of one connection ---------------------------------------------------------

    def _pipe(self, source: socket.socket, sink: socket.socket, direction: Direction) -> None:
        with self._lock:
            self._next_pipe += 1
            pipe = self._next_pipe
        line: queue.Queue[tuple[float, bytes | _Stall | _Cut | None]] = queue.Queue(256)
        threading.Thread(
            target=self._read, args=(source, line, pipe, direction), daemon=True
        ).start()
        threading.Thread(target=self._write, args=(sink, line), daemon=True).start()

    def _read(
        self,
        source: socket.socket,
        line: queue.Queue[tuple[float, bytes | _Stall | _Cut | None]],
        pipe: int,
        direction: Direction,
    ) -> None:
        gap = [-1]  # bytes to the next random flip (-1: not drawn yet)
        while True:
            try:
                data = source.recv(_CHUNK)
            except OSError:
                data = b""
            if not data:
                self._put(line, (0.0, None), source)
                return
            with self._lock:
                due = time.monotonic() + self._latency
                items = self._plan(bytearray(data), pipe, direction, gap)
            for item in items:
                if not self._put(line, (due, item), source) or isinstance(item, _Cut):
                    return

    def _put(
        self,
        line: queue.Queue[tuple[float, bytes | _Stall | _Cut | None]],
        item: tuple[float, bytes | _Stall | _Cut | None],
        source: socket.socket,
    ) -> bool:
        """Queue ``item``, waiting while the line is full (backpressure); False once the proxy
        or this connection is gone, so a reader never waits on a writer that left."""
        while not self._stop.is_set() and source.fileno() != -1:
            try:
                line.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _plan(
        self, data: bytearray, pipe: int, direction: Direction, gap: list[int]
    ) -> list[bytes | _Stall | _Cut]:
        """Split a chunk at the armed triggers (holding the lock): data, stalls and a cut, in
        stream order, with the flips applied."""
        self._flip_randomly(data, direction, gap)
        items: list[bytes | _Stall | _Cut] = []
        start = 0
        mine = [t for t in self._triggers if t.direction == direction]
        while True:
            hits = [
                (left, t)
                for t in mine
                if (left := t.remaining(pipe)) is not None and left < len(data) - start
            ]
            if not hits:
                break
            offset, trigger = min(hits, key=lambda hit: hit[0])
            offset = max(0, offset)
            at = start + offset
            for t in mine:
                t.advance(pipe, offset)
            if trigger.kind == "flip":
                data[at] ^= 1 << self._rng.randrange(8)
                self.flips += 1
                items.append(bytes(data[start : at + 1]))
                consumed = 1
            else:
                items.append(bytes(data[start:at]))
                consumed = 0
                if trigger.kind == "stall":
                    self.stalls += 1
                    items.append(_Stall(trigger.seconds))
                else:
                    items.append(_Cut())
                    self._retire(trigger, pipe)
                    return items
            self._retire(trigger, pipe)
            mine.remove(trigger)
            for t in mine:
                t.advance(pipe, consumed)
            start = at + consumed
        for t in mine:
            t.advance(pipe, len(data) - start)
        items.append(bytes(data[start:]))
        return [item for item in items if not isinstance(item, bytes) or item]

    def _retire(self, trigger: _Trigger, pipe: int) -> None:
        if trigger.every:
            trigger.done.add(pipe)
        elif trigger in self._triggers:
            self._triggers.remove(trigger)

    def _flip_gap(self, direction: Direction) -> int:
        rate = self._rate[direction]
        if rate <= 0:
            return -1
        # Geometric gaps: the same flips as a coin per byte, without a coin per byte.
        return int(math.log(1.0 - self._rng.random()) / math.log(1.0 - min(rate, 0.5)))

    def _flip_randomly(self, data: bytearray, direction: Direction, gap: list[int]) -> None:
        if self._rate[direction] <= 0:
            gap[0] = -1
            return
        if gap[0] < 0:
            gap[0] = self._flip_gap(direction)
        pos = gap[0]
        while pos < len(data):
            data[pos] ^= 1 << self._rng.randrange(8)
            self.flips += 1
            pos += 1 + self._flip_gap(direction)
        gap[0] = pos - len(data)

    def _write(
        self, sink: socket.socket, line: queue.Queue[tuple[float, bytes | _Stall | _Cut | None]]
    ) -> None:
        while True:
            due, item = line.get()
            wait = due - time.monotonic()
            if wait > 0 and self._stop.wait(wait):
                return
            if item is None:
                with contextlib.suppress(OSError):
                    sink.shutdown(socket.SHUT_WR)
                return
            if isinstance(item, _Stall):
                if self._stop.wait(item.seconds):
                    return
                continue
            if isinstance(item, _Cut):
                with self._lock:
                    self._cut_locked()
                return
            try:
                sink.sendall(item)
            except OSError:
                return
