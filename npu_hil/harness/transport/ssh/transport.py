"""SshTransport: a board reached over SSH (paramiko), key authentication only, one reused
connection; transfers checked end to end by size and sha256 and renamed into place, idempotent
operations repeated after a reconnect, every command word ``shlex.quote``-d and every remote path
confined to the workdir, symlinks followed (docs/runtime/agent.md, "SSH", "Transports"). Host keys
are checked by default: the harness's own known_hosts (written under ``accept-new``) plus the
user's ``~/.ssh/known_hosts`` (read only); a changed key is always refused, naming its SHA256
fingerprint. A remote process's end is told with the signal that killed it."""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import socket
import stat
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import paramiko
from filelock import FileLock
from paramiko.common import MSG_CHANNEL_REQUEST

from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.base import (
    CompletedRun,
    RemotePathError,
    StreamExit,
    remote_path,
)
from npu_hil.harness.transport.defaults import (
    BOARD_PYTHON,
    SSH_PORT,
    HostKeyPolicy,
    check_host_key_policy,
)
from npu_hil.harness.transport.oserrors import board_os_error
from npu_hil.harness.transport.ssh import files
from npu_hil.harness.transport.ssh.files import LINK_ERRORS, link_lost
from npu_hil.harness.transport.stderr import StderrTail
from npu_hil.harness.transport.workdir import check_workdir_probe, workdir_probe

log = logging.getLogger(__name__)

T = TypeVar("T")

# --- host keys -----------------------------------------------------------------------------------

DEFAULT_KNOWN_HOSTS = Path("~/.config/npu-hil/known_hosts")
USER_KNOWN_HOSTS = Path("~/.ssh/known_hosts")


class KnownHostsPolicy(paramiko.MissingHostKeyPolicy):
    """Called by paramiko only for a key it found in no known_hosts file. A key is named by its
    ``fingerprint`` as OpenSSH prints it (``SHA256:<base64, no padding>``)."""

    def __init__(self, policy: HostKeyPolicy, own_file: Path) -> None:
        self.policy = policy
        self.own_file = own_file

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        if self.policy != "accept-new":
            raise TransportError(
                f"unknown host key for {hostname}: {key.get_name()} {key.fingerprint}; "
                f"refused (host_key_policy='strict'); add it to {self.own_file} after checking it "
                "on the board, or use host_key_policy='accept-new'"
            )
        self.own_file.parent.mkdir(parents=True, exist_ok=True)
        # Several processes (xdist workers, parallel nightlies) may meet the same new board at
        # once: under the lock the file is read again, so the key is appended once, and a
        # different key another process recorded meanwhile is refused like any changed key.
        with FileLock(f"{self.own_file}.lock", timeout=60.0):
            recorded = recorded_key(self.own_file, hostname, key.get_name())
            if recorded is not None:
                if recorded.asbytes() != key.asbytes():
                    raise TransportError(
                        f"host key for {hostname} changed: the board offers {key.get_name()} "
                        f"{key.fingerprint}, {self.own_file} has {recorded.fingerprint} "
                        "(recorded by another process meanwhile); refused"
                    )
                return
            entry = paramiko.hostkeys.HostKeyEntry([hostname], key)
            # Append, never rewrite: the file may hold keys of other boards.
            line = entry.to_line()
            if line is None:  # paramiko writes no line for an entry it cannot express
                raise TransportError(f"host key for {hostname}: cannot write it to {self.own_file}")
            with self.own_file.open("a", encoding="utf-8") as stream:
                stream.write(line)
        log.warning(
            "accepted new host key for %s: %s %s (recorded in %s)",
            hostname,
            key.get_name(),
            key.fingerprint,
            self.own_file,
        )


def recorded_key(path: Path, hostname: str, key_type: str) -> paramiko.PKey | None:
    """The ``key_type`` key ``path`` records for ``hostname`` now (None: none, or no file)."""
    if not path.is_file():
        return None
    keys = paramiko.HostKeys()
    keys.load(str(path))
    found = keys.lookup(hostname)
    return None if found is None else found.get(key_type)


# --- remote processes ----------------------------------------------------------------------------

# OpenSSH reports a command killed by a signal with an ``exit-signal`` channel request (RFC 4254
# 6.10: the signal's name without ``SIG``, ...) instead of an ``exit-status``; paramiko ignores it
# and leaves the status at -1 ("killed by SIGHUP" whatever the signal was), so it is recorded here.

EXIT_QUIET_S = 0.5
"""After a command's exit status, how long its output may stay silent without an EOF before the
rest is no longer waited for (a background child holding the pipe open)."""

_ATTR = "npu_hil_exit_signal"


def record_exit_signals(transport: paramiko.Transport) -> None:
    """Make ``transport`` note every ``exit-signal`` its channels receive (the rest of each
    channel request is paramiko's as before). paramiko looks its message handlers up on the
    transport object, so this touches this connection only."""
    # paramiko's private handler table and request handler: its stubs do not declare them.
    table: dict[int, Any] = dict(type(transport)._channel_handler_table)  # type: ignore[attr-defined]
    table[MSG_CHANNEL_REQUEST] = _handle_request
    transport._channel_handler_table = table  # type: ignore[attr-defined]


def _handle_request(channel: paramiko.Channel, message: paramiko.Message) -> None:
    start = message.packet.tell()
    with contextlib.suppress(Exception):  # a malformed request stays paramiko's to refuse
        if message.get_text() == "exit-signal":
            message.get_boolean()  # want reply: always false for exit-signal
            setattr(channel, _ATTR, message.get_text())
    message.packet.seek(start)
    paramiko.Channel._handle_request(channel, message)  # type: ignore[attr-defined]


def exit_returncode(channel: paramiko.Channel, status: int) -> int | None:
    """A channel's end as a Popen-style return code: its exit status, minus the number (on this
    host) of the signal that killed it, None when the board said neither (the link went away)."""
    if status != -1:
        return status
    name = getattr(channel, _ATTR, None)
    if not isinstance(name, str) or not name:
        return None
    try:
        return -int(signal.Signals[name if name.startswith("SIG") else f"SIG{name}"])
    except KeyError:
        return None


def collect_until_exit(
    channel: paramiko.Channel, stdout: bytearray, stderr: bytearray, deadline: float, name: str
) -> bool:
    """Read the command's output into ``stdout`` and ``stderr`` until it has exited and said
    all (True), or until ``deadline`` (False: the caller kills it). Polled, so a command that
    keeps its pipes open past the deadline is still caught; a link lost first is a
    TransportError naming the command."""
    channel.setblocking(False)
    heard = time.monotonic()  # output or the exit status, whichever came last
    exited = False
    while True:
        busy = False
        while channel.recv_ready():
            stdout += channel.recv(65536)
            busy = True
        while channel.recv_stderr_ready():
            stderr += channel.recv_stderr(65536)
            busy = True
        if busy or (channel.exit_status_ready() and not exited):
            heard = time.monotonic()
            exited = channel.exit_status_ready()
        # sshd may send the exit status before the last of the output (RFC 4254 orders
        # neither), so the end is the EOF after it; a background child that keeps the pipe open
        # gets a moment of silence instead.
        ended = channel.eof_received or channel.closed
        quiet = time.monotonic() - heard > EXIT_QUIET_S
        drained = not channel.recv_ready() and not channel.recv_stderr_ready()
        if exited and (ended or quiet) and drained:
            return True
        transport = channel.get_transport()
        if channel.closed or transport is None or not transport.is_active():
            raise TransportError(f"{name!r}: link lost while it ran")
        if time.monotonic() > deadline:
            return False
        if not busy:
            time.sleep(0.002)


class SshStream:
    """A long-running remote process on an exec channel; stderr drained by a thread into a tail.
    ``kill`` kills a process group on the board (over a channel of its own)."""

    def __init__(self, channel: paramiko.Channel, pid: int, kill: Callable[[int], None]) -> None:
        self._kill = kill
        self._channel = channel
        self.pid = pid
        self._exit: StreamExit | None = None
        self._stderr = StderrTail(
            channel.recv_stderr, (OSError, EOFError, paramiko.SSHException), name=f"ssh {pid}"
        )

    def send(self, data: bytes) -> None:
        if self._exit is not None:
            raise TransportError(f"ssh stream {self.pid} is closed")
        try:
            self._channel.sendall(data)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise TransportError(f"ssh stream {self.pid}: cannot send ({exc})") from exc

    def recv(self, n: int, timeout: float) -> bytes:
        if self._exit is not None:
            return b""
        self._channel.settimeout(max(0.001, timeout))
        try:
            return self._channel.recv(n)
        except TimeoutError:
            raise TransportError(
                f"ssh stream {self.pid}: nothing received within {timeout:.1f} s"
            ) from None
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise TransportError(f"ssh stream {self.pid}: link lost ({exc})") from exc

    def stderr_tail(self) -> bytes:
        return self._stderr.tail()

    def close(self, timeout: float = 5.0) -> StreamExit:
        if self._exit is not None:
            return self._exit
        returncode: int | None = None
        with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
            self._channel.shutdown_write()
        if self._exited(max(0.0, timeout)):
            returncode = exit_returncode(self._channel, self._channel.recv_exit_status())
        else:
            self._kill(self.pid)
            if self._exited(2.0):
                # An exit by signal the board did not name: SIGKILL is what we sent.
                status = self._channel.recv_exit_status()
                returncode = exit_returncode(self._channel, status)
                if returncode is None:
                    returncode = -signal.SIGKILL
        self._stderr.join(1.0)
        self._channel.close()
        self._exit = StreamExit(returncode, self.stderr_tail())
        return self._exit

    def _exited(self, seconds: float) -> bool:
        """Whether the process exits within ``seconds``."""
        end = time.monotonic() + seconds
        while not self._channel.exit_status_ready() and time.monotonic() < end:
            time.sleep(0.01)
        return self._channel.exit_status_ready()


# --- remote paths: kept inside the workdir on the board, symlinks followed, walked over SFTP ------


class SymlinkGuard:
    """Refuses a remote path whose symlinks lead out of ``workdir`` (RemotePathError)."""

    def __init__(self, workdir: str) -> None:
        self._workdir = PurePosixPath(workdir)
        self._root: PurePosixPath | None = None  # the workdir as the board resolves it
        self._safe: set[PurePosixPath] = set()  # directories known to resolve inside
        self._lock = threading.Lock()

    def reset(self) -> None:
        """Forget everything: a new connection may be a rebooted board with other links."""
        with self._lock:
            self._root = None
            self._safe.clear()

    def forget(self, full: str) -> None:
        """Forget ``full`` and every directory below it (it was removed; it may come back as a
        link)."""
        gone = PurePosixPath(full)
        with self._lock:
            self._safe = {d for d in self._safe if not d.is_relative_to(gone)}

    def check(
        self, sftp: paramiko.SFTPClient, full: str, *, create_dirs: bool = False
    ) -> paramiko.SFTPAttributes | None:
        """Check ``full``: its directories, then itself; with ``create_dirs``, make the missing
        directories (``mkdir -p`` over SFTP, no exec channel). Returns the ``lstat`` of ``full``
        (None: missing); for a symlink that stays inside, the link's own attributes."""
        path = PurePosixPath(full)
        self._check_dirs(sftp, path, create=create_dirs)
        try:
            attrs = sftp.lstat(full)
        except FileNotFoundError:
            return None
        self._check_entry(sftp, path, attrs, path)
        return attrs

    # --- internals -------------------------------------------------------------------------------

    def _check_dirs(self, sftp: paramiko.SFTPClient, path: PurePosixPath, *, create: bool) -> None:
        current = self._workdir
        for part in path.parent.relative_to(self._workdir).parts:
            current = current / part
            with self._lock:
                if current in self._safe:
                    continue
            try:
                attrs = sftp.lstat(str(current))
            except FileNotFoundError:
                if not create:
                    return
                try:
                    sftp.mkdir(str(current))
                except OSError:
                    # A concurrent mkdir is fine; anything else shows in the lstat.
                    self._check_entry(sftp, current, sftp.lstat(str(current)), path)
            else:
                self._check_entry(sftp, current, attrs, path)
            with self._lock:
                self._safe.add(current)

    def _root_of(self, sftp: paramiko.SFTPClient) -> PurePosixPath:
        with self._lock:
            root = self._root
        if root is None:
            root = PurePosixPath(sftp.normalize(str(self._workdir)))
            with self._lock:
                self._root = root
        return root

    def _check_entry(
        self,
        sftp: paramiko.SFTPClient,
        path: PurePosixPath,
        attrs: paramiko.SFTPAttributes,
        requested: PurePosixPath,
    ) -> None:
        if not stat.S_ISLNK(attrs.st_mode or 0):
            return  # a real entry in a checked directory
        try:
            resolved = PurePosixPath(sftp.normalize(str(path)))
        except FileNotFoundError:
            # The link points into a directory that does not exist: nothing can be read through
            # it, and the transport never creates through a link (mkdir and rename act on the
            # link itself; rm -rf removes the link, not its target).
            return
        root = self._root_of(sftp)
        if not resolved.is_relative_to(root):
            asked = str(requested.relative_to(self._workdir))
            link = str(path.relative_to(self._workdir))
            raise RemotePathError(
                f"remote path {asked!r}: the symlink {link!r} leads to {resolved} on the board, "
                f"outside the workdir {self._workdir}"
            )


# --- the transport -------------------------------------------------------------------------------

# The file channels' window and packet sizes: paramiko's defaults of 2 MB / 32 KB stall on the
# round trip.
WINDOW_SIZE = 16 * 1024 * 1024
MAX_PACKET_SIZE = 256 * 1024


class SshTransport:
    """Files and processes in ``workdir`` on ``host``, over one reused SSH connection.

    Authentication: ``key_file`` when given, else the ssh-agent and the default keys of
    ``~/.ssh``; never a password. Host keys: see the module docstring; ``known_hosts`` is the
    harness's own file (default ``~/.config/npu-hil/known_hosts``), ``user_known_hosts`` is read
    only (``None`` to ignore it).

    Transfers: files up to ``readback_max`` bytes go over SFTP (no process started on the board)
    and are read back to check them; larger ones are streamed over an exec channel and hashed on
    the board as they pass, on channels of :data:`WINDOW_SIZE` and :data:`MAX_PACKET_SIZE`.
    Every transfer's size and sha256 are checked end to end.

    Robustness: ``connect_timeout`` per attempt, ``keepalive_s`` SSH keepalives so a dead link is
    noticed, ``io_timeout`` seconds without progress on a transfer before the link counts as
    lost, ``retries`` reconnects with ``backoff_s * 2**attempt`` seconds between them.
    """

    def __init__(
        self,
        host: str,
        port: int = SSH_PORT,
        user: str | None = None,
        *,
        workdir: str,
        python: str = BOARD_PYTHON,
        key_file: str | os.PathLike[str] | None = None,
        known_hosts: str | os.PathLike[str] | None = None,
        user_known_hosts: str | os.PathLike[str] | None = USER_KNOWN_HOSTS,
        host_key_policy: HostKeyPolicy = "strict",
        connect_timeout: float = 10.0,
        keepalive_s: float = 15.0,
        retries: int = 3,
        backoff_s: float = 0.5,
        env: Mapping[str, str] | None = None,
        readback_max: int = 1024 * 1024,
        io_timeout: float = 30.0,
    ) -> None:
        check_host_key_policy(host_key_policy)
        if not PurePosixPath(workdir).is_absolute():
            raise ValueError(f"workdir {workdir!r}: expected an absolute path on the board")
        self.host = host
        self.port = port
        self.user = user or os.environ.get("USER") or "root"
        self.workdir = str(PurePosixPath(workdir))
        self.python = python
        self.key_file = None if key_file is None else str(Path(key_file).expanduser())
        self.known_hosts = Path(known_hosts or DEFAULT_KNOWN_HOSTS).expanduser()
        self.user_known_hosts = (
            None if user_known_hosts is None else Path(user_known_hosts).expanduser()
        )
        self.host_key_policy: HostKeyPolicy = host_key_policy
        self.connect_timeout = connect_timeout
        self.keepalive_s = keepalive_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.env = dict(env or {})
        self.readback_max = readback_max
        self.io_timeout = io_timeout
        self._guard = SymlinkGuard(self.workdir)
        self.workdir_checked = False
        self._client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self._lock = threading.RLock()
        # File operations one at a time: they share the connection's one SFTP channel, whose
        # answers paramiko reads without telling threads apart (two threads' requests at once
        # read each other's answers: "Garbage packet received"). Commands and streams, each
        # on a channel of its own, run side by side. Taken before _lock, never after it.
        self._files = threading.RLock()
        self.connects = 0  # how many connections were made (tests and benchmarks read it)

    # --- the connection --------------------------------------------------------------------------

    def _connect_once(self) -> None:
        client = paramiko.SSHClient()
        if self.user_known_hosts is not None and self.user_known_hosts.is_file():
            client.load_system_host_keys(str(self.user_known_hosts))
        if self.known_hosts.is_file():
            client.load_host_keys(str(self.known_hosts))
        client.set_missing_host_key_policy(KnownHostsPolicy(self.host_key_policy, self.known_hosts))
        # load_host_keys makes paramiko rewrite that file on save(); we never call save(), the
        # policy appends instead, so the user's file is never touched.
        try:
            client.connect(
                self.host,
                self.port,
                self.user,
                key_filename=self.key_file,
                allow_agent=self.key_file is None,
                look_for_keys=self.key_file is None,
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
                channel_timeout=self.connect_timeout,
            )
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise TransportError(
                f"host key for {self.host}:{self.port} changed: the board offered "
                f"{exc.key.get_name()} {exc.key.fingerprint}, known_hosts has "
                f"{exc.expected_key.fingerprint}; refused (possible man-in-the-middle)"
            ) from None
        except paramiko.AuthenticationException as exc:
            client.close()
            raise TransportError(
                f"ssh {self.user}@{self.host}:{self.port}: key authentication refused ({exc})"
            ) from None
        except TransportError:
            client.close()
            raise
        transport = client.get_transport()
        assert transport is not None
        transport.set_keepalive(max(1, int(self.keepalive_s)))
        record_exit_signals(transport)  # a killed command is told by its signal, not as -1
        # Small request/answer exchanges (SFTP stat, channel opens) otherwise wait out Nagle and
        # delayed ACKs: about 40 ms per round trip.
        if isinstance(transport.sock, socket.socket):  # a proxy channel has no TCP options
            with contextlib.suppress(OSError):
                transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._client = client
        self.connects += 1
        try:
            self._ensure_workdir()
        except BaseException:
            self._drop()  # the caller's next attempt starts a new connection
            raise

    def _ensure_workdir(self) -> None:
        """``mkdir -p`` the workdir, asking SFTP first: the channel is needed for files anyway,
        and a stat costs a round trip where an exec costs a fork of sshd and a shell (a good
        part of a reconnect). A board without the SFTP subsystem still gets its workdir and
        can run commands."""
        if not self.workdir_checked:
            # Once per transport, before the first deployment: whose folder it is.
            where = f"ssh {self.user}@{self.host}:{self.port}"
            check_workdir_probe(
                self.workdir, self._exec_checked(workdir_probe(self.workdir), 30.0), where
            )
            self.workdir_checked = True
            return
        try:
            self._sftp_client().stat(self.workdir)
            return
        except FileNotFoundError:
            pass
        except paramiko.SSHException:
            transport = self._client.get_transport() if self._client else None
            if transport is None or not transport.is_active():
                raise
        self._exec_checked(f"mkdir -p -- {shlex.quote(self.workdir)}", 30.0)

    def _connect(self) -> paramiko.SSHClient:
        """The live connection, (re)connecting with backoff. Host key and authentication
        refusals are final: retrying cannot change them."""
        with self._lock:
            if self._client is not None:
                transport = self._client.get_transport()
                if transport is not None and transport.is_active():
                    return self._client
                self._drop()
            last: Exception | None = None
            for attempt in range(self.retries + 1):
                if attempt:
                    time.sleep(self.backoff_s * 2 ** (attempt - 1))
                try:
                    self._connect_once()
                    assert self._client is not None
                    return self._client
                except TransportError:
                    raise
                except LINK_ERRORS as exc:
                    last = exc
                    log.info(
                        "ssh %s:%d: connect attempt %d failed: %s",
                        self.host,
                        self.port,
                        attempt + 1,
                        exc,
                    )
            raise TransportError(
                f"ssh {self.user}@{self.host}:{self.port}: no connection after "
                f"{self.retries + 1} attempts: {last}"
            )

    def _drop(self, used: paramiko.Transport | None = None) -> None:
        """Close the connection; with ``used``, only when it is still the connection an
        operation that failed was using: under several threads, the first to see a lost link
        drops it and the others find the new one, instead of each dropping the one before."""
        with self._lock:
            if used is not None and (
                self._client is None or self._client.get_transport() is not used
            ):
                return
            if self._sftp is not None:
                with contextlib.suppress(Exception):
                    self._sftp.close()
            if self._client is not None:
                with contextlib.suppress(Exception):
                    self._client.close()
            self._sftp = None
            self._client = None
            self._guard.reset()

    def prove(self) -> None:
        """Connect now, so an unreachable board is a TransportError before anything else. The
        first connection runs the workdir probe through the board's shell and reads its answer
        back, which proves the shell as much as a ``true`` would, without another exec (a fork
        of sshd and a login shell per board)."""
        self._connect()

    def close(self) -> None:
        """Close the connection (the next call reconnects)."""
        self._drop()

    def __enter__(self) -> SshTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sftp_client(self) -> paramiko.SFTPClient:
        with self._lock:  # one SFTP channel per connection, whichever thread asks first
            if self._sftp is None:
                channel = self._file_channel()
                channel.invoke_subsystem("sftp")
                self._sftp = paramiko.SFTPClient(channel)
            return self._sftp

    def _file_channel(self) -> paramiko.Channel:
        """A channel for files (the SFTP one, or a bulk transfer's exec channel)."""
        transport = self._connect().get_transport()
        assert transport is not None
        channel = transport.open_session(
            window_size=WINDOW_SIZE, max_packet_size=MAX_PACKET_SIZE, timeout=self.connect_timeout
        )
        # Bounded waits: a stalled link raises socket.timeout, which reconnects.
        channel.settimeout(self.io_timeout)
        return channel

    def _stream(self, command: str) -> paramiko.Channel:
        """An exec channel for a bulk transfer, sized like the SFTP one."""
        channel = self._file_channel()
        channel.exec_command(command)
        return channel

    def _retrying(self, what: str, operation: Callable[[], T]) -> T:
        """Run an idempotent operation, reconnecting and repeating it after a lost link."""
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            used = self._connect().get_transport()  # the connection the operation will use
            try:
                return operation()
            except TransportError:
                raise
            except LINK_ERRORS as exc:
                if not link_lost(exc):
                    raise TransportError(f"{what}: {exc}") from exc
                last = exc
                log.info("ssh %s: %s failed (%s); reconnecting", self.host, what, exc)
                self._drop(used)
        raise TransportError(f"{what}: link lost {self.retries + 1} times; last error: {last}")

    # --- commands --------------------------------------------------------------------------------

    def _full(self, remote: str | PurePosixPath) -> str:
        return str(PurePosixPath(self.workdir) / remote_path(remote))

    def _command(self, argv: Sequence[str]) -> str:
        if not argv:
            raise ValueError("empty argv")
        env = [f"{k}={v}" for k, v in self.env.items()]
        words = ["env", *env, *argv] if env else list(argv)
        # The first stdout line is the shell's pid (the command is exec'd into it), so a timed
        # out command can be killed with its whole process group.
        return f"echo $$ && cd -- {shlex.quote(self.workdir)} && exec " + " ".join(
            shlex.quote(w) for w in words
        )

    def _exec_checked(self, command: str, timeout: float) -> bytes:
        """A short helper command of the transport's own; TransportError unless it exits 0."""
        client = self._client
        assert client is not None
        _, stdout, stderr = client.exec_command(command, timeout=timeout)
        out = stdout.read()
        status = stdout.channel.recv_exit_status()
        if status != 0:
            raise TransportError(f"ssh {self.host}: {command!r} exited {status}: {stderr.read()!r}")
        return out

    def _kill(self, pid: int) -> None:
        # sshd puts every command in its own POSIX session and process group, so the group of
        # the shell we exec'd into holds exactly the command and its children.
        command = f"kill -KILL -- -{pid} 2>/dev/null || kill -KILL {pid} 2>/dev/null; true"
        with contextlib.suppress(Exception):  # _retrying connects before each attempt
            self._retrying(command, lambda: self._exec_checked(command, 10.0))

    def _start(self, argv: Sequence[str], deadline: float) -> tuple[paramiko.Channel, int]:
        def start() -> paramiko.Channel:
            transport = self._connect().get_transport()
            assert transport is not None
            channel = transport.open_session(timeout=self.connect_timeout)
            channel.exec_command(self._command(argv))
            return channel

        # Starting is repeatable (nothing ran yet); what follows is not.
        channel = self._retrying(f"start {argv[0]!r}", start)
        line = b""
        while not line.endswith(b"\n"):
            channel.settimeout(max(0.001, deadline - time.monotonic()))
            try:
                byte = channel.recv(1)
            except (OSError, EOFError, paramiko.SSHException) as exc:
                channel.close()
                raise TransportError(
                    f"start {argv[0]!r}: no answer from the shell ({exc})"
                ) from exc
            if not byte:
                channel.close()
                raise TransportError(f"start {argv[0]!r}: the shell ended before the command")
            line += byte
        return channel, int(line)

    def run(
        self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None
    ) -> CompletedRun:
        started = time.monotonic()
        # Opening the channel is bounded by connect_timeout on its own, so a slow sshd fork does
        # not eat the command's time; the command's timeout starts once it runs.
        channel, pid = self._start(argv, started + self.connect_timeout)
        deadline = time.monotonic() + timeout
        stdout = bytearray()
        stderr = bytearray()
        try:
            if stdin is not None:
                # Bounded too: a command that stops reading (its stdout window full) must not
                # block this send past the timeout.
                channel.settimeout(max(0.001, deadline - time.monotonic()))
                try:
                    files.send_all(channel, stdin)
                except TimeoutError:
                    self._kill(pid)
                    raise TransportError(
                        f"{' '.join(argv)}: no exit within {timeout:.1f} s (stdin not read); killed"
                    ) from None
            channel.shutdown_write()
            if not collect_until_exit(channel, stdout, stderr, deadline, argv[0]):
                self._kill(pid)
                raise TransportError(f"{' '.join(argv)}: no exit within {timeout:.1f} s; killed")
            returncode = exit_returncode(channel, channel.recv_exit_status())
            if returncode is None:
                raise TransportError(f"{argv[0]!r}: ended with no exit status (link lost?)")
        except (OSError, EOFError, paramiko.SSHException) as exc:
            self._drop(channel.get_transport())
            raise TransportError(f"{argv[0]!r}: link lost while it ran ({exc})") from exc
        finally:
            channel.close()
        return CompletedRun(returncode, bytes(stdout), bytes(stderr), time.monotonic() - started)

    def open_stream(self, argv: Sequence[str]) -> SshStream:
        channel, pid = self._start(argv, time.monotonic() + self.connect_timeout)
        return SshStream(channel, pid, self._kill)

    # --- files -----------------------------------------------------------------------------------

    def put(self, local_path: str | Path, remote_path: str | PurePosixPath) -> None:
        full = self._full(remote_path)
        local = Path(local_path)
        try:
            size = local.stat().st_size
        except OSError as exc:
            raise TransportError(f"put {local_path}: {exc}") from exc
        parent = PurePosixPath(full).parent
        tmp = f"{parent}/.{PurePosixPath(full).name}.{uuid.uuid4().hex[:12]}.tmp"
        what = f"put {local_path} -> {remote_path}"

        def attempt() -> None:
            try:
                transfer()
            except (TransportError, OSError) as exc:
                if link_lost(exc):
                    raise
                # SFTP has no word for a full or read-only disk ("Failure", or a short file):
                # ask the board itself, by writing as much in the same folder.
                number = files.write_problem(self._client, str(parent), size, self.io_timeout)
                if number is None:
                    raise
                raise board_os_error(what, number, f"{parent}; {exc}") from exc

        def transfer() -> None:
            sftp = self._sftp_client()
            self._guard.check(sftp, full, create_dirs=True)
            try:
                if size > self.readback_max:
                    sent, board_sha = files.put_stream(
                        self._stream, local, tmp, what, io_timeout=self.io_timeout
                    )
                    landed = (int(sftp.stat(tmp).st_size or 0), board_sha)
                else:
                    # The size and sha256 of what landed come with the transfer's answers.
                    sent, landed = files.put_sftp(sftp, local, tmp)
                if landed != sent:
                    raise TransportError(
                        f"{what}: landed as {landed[0]} bytes sha256 {landed[1]}, "
                        f"sent {sent[0]} bytes sha256 {sent[1]}"
                    )
                sftp.posix_rename(tmp, full)
            except BaseException as exc:
                # Over a lost link the removal would only wait out io_timeout; a repeat reuses
                # the name, so a temporary is left behind only when every attempt failed.
                if not link_lost(exc):
                    with contextlib.suppress(Exception):
                        sftp.remove(tmp)
                raise

        with self._files:
            self._retrying(what, attempt)

    def get(self, remote_path: str | PurePosixPath, local_path: str | Path) -> None:
        full = self._full(remote_path)
        local = Path(local_path)
        local.parent.mkdir(parents=True, exist_ok=True)
        tmp = local.with_name(f".{local.name}.{uuid.uuid4().hex[:12]}.tmp")
        what = f"get {remote_path}"

        def attempt() -> None:
            sftp = self._sftp_client()
            size = self._size_of(sftp, full)
            if size is None:
                raise TransportError(f"{what}: no such file in {self.workdir}")
            try:
                if size > self.readback_max:
                    got, want = files.get_stream(
                        self._stream,
                        full,
                        tmp,
                        size,
                        what,
                        io_timeout=self.io_timeout,
                        window=WINDOW_SIZE,
                    )
                else:
                    got, want = files.get_sftp(sftp, full, tmp, size)
                if got != want:
                    raise TransportError(
                        f"{what}: received {got[0]} bytes sha256 {got[1]}, "
                        f"the board has {want[0]} bytes sha256 {want[1]}"
                    )
                os.replace(tmp, local)
            finally:
                tmp.unlink(missing_ok=True)

        with self._files:
            self._retrying(what, attempt)

    def _size_of(self, sftp: paramiko.SFTPClient, full: str) -> int | None:
        """The size of the file ``full`` names once confined (None: missing)."""
        attrs = self._guard.check(sftp, full)
        if attrs is not None and stat.S_ISLNK(attrs.st_mode or 0):
            try:
                attrs = sftp.stat(full)  # the link's target, which the guard found inside
            except FileNotFoundError:
                attrs = None
        return None if attrs is None else int(attrs.st_size or 0)

    def exists(self, remote_path: str | PurePosixPath) -> bool:
        full = self._full(remote_path)
        with self._files:
            return self._retrying(
                f"exists {remote_path}",
                lambda: self._size_of(self._sftp_client(), full) is not None,
            )

    def cleanup(self, remote_path: str | PurePosixPath) -> None:
        full = self._full(remote_path)

        def attempt() -> None:
            self._guard.check(self._sftp_client(), full)
            self._exec_checked(f"rm -rf -- {shlex.quote(full)}", 60.0)

        try:
            with self._files:
                self._retrying(f"cleanup {remote_path}", attempt)
        finally:
            # Whatever was removed may come back as something else, a link included.
            self._guard.forget(full)
