#!/usr/bin/env python3
"""npu-hil relay: one batch of requests from a shell command to a listening agent, and back.
Standard library only, no numpy (the frame format is ``frames.py`` beside it). Its options and exit
statuses: ``docs/runtime/agent.md`` (Listening, and the relay)."""

from __future__ import annotations

# Lean imports on purpose: every request over a console pays this start-up. The public socket
# module (enum, selectors), base64 (re) and argparse would more than double it.
import _socket as socket
import binascii
import hashlib
import os
import sys
import time

if __package__:
    from .frames import FRAME_HEADER, frame_length, whole_frames
else:
    # Run as a script (the board's form): ``-I`` keeps this folder off sys.path. The frame
    # format is the package's own, frames.py beside this file: struct only (no numpy, no json),
    # so the start-up stays what it was.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from frames import FRAME_HEADER, frame_length, whole_frames  # type: ignore[import-not-found,no-redef]

    del sys.path[0]

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_GONE = 3
EXIT_CUT = 4
EXIT_DAMAGED = 5

TRAILER = "NPU-RELAY"
DEFAULT_INLINE_MAX = 256 * 1024
CONNECT_POLL_S = 0.02
B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
B64_LINE = 76
USAGE = (
    "usage: relay.py SOCKET [--wait S] [--exited FILE] [--drop-hello] "
    "[--base64 [--sha256 HEX]] [--out FILE] [--inline-max N]"
)


class RelayError(Exception):
    """A reason to stop, with the exit status that says it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class CutShort(RelayError):
    """The agent stopped answering part-way: ``answer`` holds the whole frames that came."""

    def __init__(self, answer: bytes, message: str) -> None:
        super().__init__(EXIT_CUT, message)
        self.answer = answer


class Options:
    """The command line (see the module docstring)."""

    def __init__(self, socket_path: str) -> None:
        self.socket = socket_path
        self.wait = 0.0
        self.exited: str | None = None
        self.drop_hello = False
        self.base64 = False
        self.sha256: str | None = None
        self.out: str | None = None
        self.inline_max = DEFAULT_INLINE_MAX


_FLAGS = {"--drop-hello": "drop_hello", "--base64": "base64"}
_VALUED = {
    "--wait": ("wait", float),
    "--exited": ("exited", str),
    "--sha256": ("sha256", str),
    "--out": ("out", str),
    "--inline-max": ("inline_max", int),
}


def parse_options(argv: list[str]) -> Options:
    """The options, or RelayError(EXIT_USAGE). By hand: argparse alone would cost more than the
    rest of the relay's start-up."""
    options = Options("")
    positional: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg in _FLAGS:
            setattr(options, _FLAGS[arg], True)
        elif arg in _VALUED:
            name, kind = _VALUED[arg]
            text = next(args, None)
            if text is None:
                raise RelayError(EXIT_USAGE, f"{arg} needs a value ({USAGE})")
            try:
                setattr(options, name, kind(text))
            except ValueError:
                raise RelayError(EXIT_USAGE, f"{arg}: bad value {text!r} ({USAGE})") from None
        elif arg.startswith("-") and arg != "-":
            raise RelayError(EXIT_USAGE, f"unknown option {arg} ({USAGE})")
        else:
            positional.append(arg)
    if len(positional) != 1:
        raise RelayError(EXIT_USAGE, USAGE)
    options.socket = positional[0]
    return options


def decode_base64(text: bytes) -> bytes:
    compact = b"".join(text.split())
    if compact.translate(None, B64_ALPHABET):
        raise RelayError(EXIT_DAMAGED, "the request is not base64")
    try:
        return binascii.a2b_base64(compact)
    except binascii.Error:
        raise RelayError(EXIT_DAMAGED, "the request is not valid base64") from None


def encode_base64(data: bytes) -> bytes:
    text = binascii.b2a_base64(data, newline=False)
    return b"".join(text[i : i + B64_LINE] + b"\n" for i in range(0, len(text), B64_LINE))


def read_request(encoded: bool, sha256: str | None) -> bytes:
    raw = sys.stdin.buffer.read()
    data = decode_base64(raw) if encoded else raw
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256.lower():
        raise RelayError(EXIT_DAMAGED, "the request does not match its sha256")
    return data


def count_requests(data: bytes) -> int:
    try:
        count, used = whole_frames(data)
    except ValueError as exc:
        raise RelayError(EXIT_CUT, f"the request is not frames: {exc}") from None
    if used != len(data):
        raise RelayError(EXIT_CUT, "the request ends inside a frame")
    return count


def connect(path: str, wait: float, exited: str | None) -> socket.socket:
    """A connection to the agent at ``path``, trying for up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except OSError as exc:
            sock.close()
            problem = exc.strerror or str(exc)
            retry = isinstance(exc, (FileNotFoundError, ConnectionRefusedError))
        if exited is not None and os.path.exists(exited):
            raise RelayError(EXIT_GONE, f"the agent at {path} exited")
        if not retry or time.monotonic() >= deadline:
            raise RelayError(EXIT_GONE, f"no agent at {path} ({problem})")
        time.sleep(CONNECT_POLL_S)


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    """``n`` bytes, or None when the connection ends first (before or inside them)."""
    chunks = []
    remaining = n
    while remaining:
        try:
            chunk = sock.recv(min(remaining, 1 << 20))
        except OSError:
            chunk = b""
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(sock: socket.socket) -> bytes | None:
    """One whole frame (header included), or None when the connection ends before it is whole."""
    header = _read_exactly(sock, FRAME_HEADER.size)
    if header is None:
        return None
    try:
        length = frame_length(header)
    except ValueError as exc:
        raise RelayError(EXIT_CUT, f"the agent's answer is not frames: {exc}") from None
    payload = _read_exactly(sock, length)
    return None if payload is None else header + payload


def exchange(sock: socket.socket, request: bytes, count: int, drop_hello: bool) -> bytes:
    """Send the requests, collect the hello and one answer per request. RelayError(EXIT_CUT)
    carries the frames that did come when the agent stops short."""
    try:
        sock.sendall(request)
        # Nothing more comes from us; the agent ends this connection, not itself, at the EOF.
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # the agent hung up: what it said before that is still to be read
    frames: list[bytes] = []
    for index in range(count + 1):
        frame = read_frame(sock)
        if frame is None:
            message = f"the agent closed the connection after {index} of {count + 1} frames"
            raise CutShort(b"".join(frames), message)
        if index or not drop_hello:
            frames.append(frame)
    return b"".join(frames)


def write_answer(answer: bytes, args: Options) -> None:
    if args.out is not None:
        fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(answer)
    out = sys.stdout.buffer
    if not args.base64:
        out.write(answer)
    else:
        if len(answer) <= args.inline_max:
            out.write(encode_base64(answer))
        digest = hashlib.sha256(answer).hexdigest()
        out.write(f"{TRAILER} {len(answer)} {digest}\n".encode("ascii"))
    out.flush()


def relay(args: Options) -> int:
    request = read_request(args.base64, args.sha256)
    count = count_requests(request)
    sock = connect(args.socket, args.wait, args.exited)
    try:
        answer = exchange(sock, request, count, args.drop_hello)
    except CutShort as short:
        write_answer(short.answer, args)
        raise
    finally:
        sock.close()
    write_answer(answer, args)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments and arguments[0] in ("-h", "--help"):
        sys.stdout.write(USAGE + "\n")
        return EXIT_OK
    try:
        return relay(parse_options(arguments))
    except RelayError as exc:
        sys.stderr.write(f"relay: {exc}\n")
        return exc.status
    except KeyboardInterrupt:
        # The host interrupts a request it stopped waiting for; it says so itself.
        return 130


if __name__ == "__main__":
    sys.exit(main())
