"""A TCP proxy on 127.0.0.1 that can cut its connections: the fault injection for SSH tests.

Threads, not asyncio, so a test can drive it synchronously. ``cut_after(n)`` arms a one-shot cut:
once ``n`` more bytes went from client to server, every open connection is closed abruptly; new
connections are served normally, so a transport can reconnect.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading


class FaultProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._budget: int | None = None
        self.cuts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def cut_after(self, nbytes: int) -> None:
        with self._lock:
            self._budget = nbytes

    def cut_now(self) -> None:
        with self._lock:
            self._cut_locked()

    def _cut_locked(self) -> None:
        self._budget = None
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
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            for sock in (client, server):  # no Nagle: SSH's small round trips stay fast
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, upstream: bool) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if not data:
                with contextlib.suppress(OSError):
                    sink.shutdown(socket.SHUT_WR)
                return
            if upstream:
                with self._lock:
                    if self._budget is not None:
                        self._budget -= len(data)
                        if self._budget <= 0:
                            self._cut_locked()
                            return
            try:
                sink.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()
            self._sockets.clear()
        self._thread.join(2)
