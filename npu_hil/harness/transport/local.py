"""LocalTransport: the "board" is a directory on this machine and a subprocess under a chosen
Python. The simulated boards use it, and it runs the real agent exactly as SSH will, so a local run
exercises the real path. POSIX hosts only (``select`` on pipes, process groups)."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from npu_hil.harness.errors import TransportError
from npu_hil.harness.folders import private_dir
from npu_hil.harness.transport.base import CompletedRun, RemotePathError, StreamExit, remote_path
from npu_hil.harness.transport.defaults import BOARD_PYTHON
from npu_hil.harness.transport.oserrors import board_os_error
from npu_hil.harness.transport.stderr import StderrTail

log = logging.getLogger(__name__)

# A stream's pipes hold this much (Linux's default is 64 KiB, and 1 MiB the most an unprivileged
# process may ask): a job's buffers then cross in a few wake-ups of each side, not one per 64 KiB.
STREAM_PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Python < 3.10 lacks the name


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the process and anything it started: each child runs in its own POSIX session, so its
    process group holds exactly its descendants."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


class LocalStream:
    """A long-running local subprocess: stdin/stdout are the byte stream, stderr is drained by a
    thread into a bounded tail (and the debug log) so a chatty process can never block on it."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        assert process.stderr is not None
        self._process = process
        self._stdin = process.stdin
        self._stdout_fd = process.stdout.fileno()
        self._exit: StreamExit | None = None
        stderr_fd = process.stderr.fileno()
        self._stderr = StderrTail(
            lambda n: os.read(stderr_fd, n), (OSError,), name=f"stream {process.pid}", log=log
        )

    def send(self, data: bytes) -> None:
        if self._exit is not None:
            raise TransportError(f"stream {self._process.pid} is closed")
        try:
            self._stdin.write(data)
            self._stdin.flush()
        except (OSError, ValueError) as exc:
            raise TransportError(f"stream {self._process.pid}: cannot send ({exc})") from exc

    def recv(self, n: int, timeout: float) -> bytes:
        if self._exit is not None:
            return b""
        ready, _, _ = select.select([self._stdout_fd], [], [], max(0.0, timeout))
        if not ready:
            raise TransportError(
                f"stream {self._process.pid}: nothing received within {timeout:.1f} s"
            )
        return os.read(self._stdout_fd, n)

    def stderr_tail(self) -> bytes:
        return self._stderr.tail()

    def close(self, timeout: float = 5.0) -> StreamExit:
        if self._exit is not None:
            return self._exit
        with contextlib.suppress(OSError):
            self._stdin.close()
        try:
            returncode = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            _kill_group(self._process)
            returncode = self._process.wait()
        self._stderr.join(1.0)
        if self._process.stdout is not None:
            self._process.stdout.close()
        if self._process.stderr is not None:
            self._process.stderr.close()
        self._exit = StreamExit(returncode, self.stderr_tail())
        return self._exit


class LocalTransport:
    """Files in ``workdir`` on this machine; commands run there as subprocesses.

    ``python`` is the interpreter the agent runs under (e.g. a pyenv 3.8 to match a board);
    ``env`` adds variables to the subprocesses' environment (e.g. ``PYTHONPATH`` for an adapter
    that needs the harness on the simulated board).
    """

    def __init__(
        self,
        workdir: str | os.PathLike[str],
        python: str = BOARD_PYTHON,
        *,
        env: Mapping[str, str] | None = None,
    ) -> None:
        # The agent is deployed here and run from here: a folder of ours alone.
        root = private_dir(workdir)
        self._workdir = root.resolve()
        self.workdir = str(self._workdir)
        self.python = python
        self._env = {**os.environ, **(env or {})}

    def _local(self, remote: str | PurePosixPath) -> Path:
        full = self._workdir / remote_path(remote)
        # Spelling alone is not enough here: a symlink inside the workdir could lead out of it.
        if not full.resolve().is_relative_to(self._workdir):
            raise RemotePathError(
                f"remote path {str(remote)!r} leaves {self._workdir} via a symlink"
            )
        return full

    def put(self, local_path: str | Path, remote_path: str | PurePosixPath) -> None:
        target = self._local(remote_path)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            private_dir(target.parent)
            shutil.copyfile(local_path, tmp)
            os.replace(tmp, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            what = f"put {local_path} -> {remote_path}"
            if exc.errno is not None:
                # Named by its cause: a full or read-only board disk says so.
                raise board_os_error(what, exc.errno, str(exc)) from exc
            raise TransportError(f"{what}: {exc}") from exc

    def get(self, remote_path: str | PurePosixPath, local_path: str | Path) -> None:
        source = self._local(remote_path)
        if not source.is_file():
            raise TransportError(f"get {remote_path}: no such file in {self._workdir}")
        Path(local_path).parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(source, local_path)
        except OSError as exc:
            raise TransportError(
                f"get {remote_path} -> {local_path}: {exc}", errno=exc.errno
            ) from exc

    def exists(self, remote_path: str | PurePosixPath) -> bool:
        return self._local(remote_path).exists()

    def _popen(self, argv: Sequence[str], stdin: int) -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(
                list(argv),
                cwd=self._workdir,
                env=self._env,
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,
            )
        except OSError as exc:
            raise TransportError(f"cannot start {argv[0]!r}: {exc}") from exc

    def run(
        self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None
    ) -> CompletedRun:
        started = time.monotonic()
        process = self._popen(argv, subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
        try:
            stdout, stderr = process.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            # The group is dead, so the pipes close; a grandchild that escaped the group could
            # still hold them, hence the bound on this second wait too.
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.communicate(timeout=5.0)
            raise TransportError(
                f"{' '.join(argv)}: no exit within {timeout:.1f} s; killed"
            ) from None
        return CompletedRun(process.returncode, stdout, stderr, time.monotonic() - started)

    def open_stream(self, argv: Sequence[str]) -> LocalStream:
        process = self._popen(argv, subprocess.PIPE)
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):  # not Linux, or past the system's pipe-max-size
                    fcntl.fcntl(stream.fileno(), _F_SETPIPE_SZ, STREAM_PIPE_BYTES)
        return LocalStream(process)

    def cleanup(self, remote_path: str | PurePosixPath) -> None:
        target = self._local(remote_path)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target, ignore_errors=True)
        else:
            target.unlink(missing_ok=True)
