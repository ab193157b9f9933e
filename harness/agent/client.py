"""AgentClient: the host's handle on the board agent through any Transport.

It deploys the agent (the board package ``harness/board``, and extra adapters: the simulated
runtime's, a test's fakes) into the transport's working directory,
content-addressed by sha256 so a redeploy copies nothing that is already there; deploys model
artifacts into a cache by sha256; and runs jobs either through one persistent agent session
(framed requests over the session's stdin/stdout; the default) or one process per job.

Remote layout, relative to the transport's workdir::

    agent/<bundle>/npu_hil_board/**   the board package: python3 agent/<bundle>/npu_hil_board ...
    agent/<bundle>/adapters/*.py      extra adapters, searched before the package's own
    agent/<bundle>/.complete          written last: the bundle is whole (named by its sha256)
    cache/<sha256>/<name>             model artifacts (--root)
    jobs/<job id>-<nonce>/            one per job, removed afterwards

Outcomes: ``submit`` returns a :class:`~harness.agent.protocol.Result` whenever the agent wrote
one, including typed runtime errors and a timeout the agent caught itself (``result.error()`` maps
them onto the harness's exceptions). Without a result it raises: ``TransportError`` when the agent
gave no answer in time (the session is killed) or a file was damaged on the way,
``AgentKilledError`` (infrastructure, and a DeviceError) when a signal ended the agent (SIGKILL,
a vendor runtime's SIGSEGV), ``DeviceError`` when it exited otherwise without an answer,
``ProtocolError`` when host and agent disagree.
After a timeout or a crash the next job starts a new session. Not thread-safe: one client per board
and worker.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any

from npu_hil.harness import board

# Imported for its registration: a serial console's agent session is this side's code.
from npu_hil.harness.agent import serial_session  # noqa: F401
from npu_hil.harness.agent.protocol import (
    JobSpec,
    ModelRef,
    Result,
    error_record,
    parse_result_document,
    read_result,
    result_files,
    write_job,
)
from npu_hil.harness.board.loader import EXTRA_ADAPTERS
from npu_hil.harness.board.wire import (
    FRAME_HEADER,
    RESULT_FILE,
    SCHEMA_MAJOR,
    SESSION_PROTOCOL_NAME,
    decode_frame,
    encode_frame,
    frame_length,
    parse_schema,
    sha256_file,
)
from npu_hil.harness.errors import AgentKilledError, DeviceError, ProtocolError, TransportError
from npu_hil.harness.folders import private_dir
from npu_hil.harness.transport.base import Session, Transport
from npu_hil.harness.transport.oserrors import board_os_error, errno_in_text

__all__ = ["AgentClient"]

log = logging.getLogger(__name__)

BOARD_SOURCE = Path(board.__file__).parent
# The board package's name in a bundle: the folder the board's Python runs.
BUNDLE_PACKAGE = "npu_hil_board"
# Adapters that need the harness itself (the simulated runtime): sent to every board like a
# test's fake, where they import only where the harness is installed (a simulated board); on a
# real board the agent reports them as UnsupportedError, by their name.
HOST_ADAPTERS = Path(__file__).with_name("host_adapters")
CACHE_DIR = "cache"
JOBS_DIR = "jobs"
AGENT_DIR = "agent"
_COMPLETE = ".complete"


def _describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "exit status unknown"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def _agent_ended(message: str, returncode: int | None) -> DeviceError:
    """The error for an agent that ended without answering: killed by a signal is
    infrastructure (AgentKilledError), any other end the runtime's (DeviceError)."""
    if returncode is not None and returncode < 0:
        return AgentKilledError(message, signal=-returncode)
    return DeviceError(message)


def _tail(stderr: bytes, head: int = 1500, tail: int = 2500) -> str:
    """The start and the end of a process's stderr: a crash report (Python's fault handler) puts
    the crashing thread's stack first, the last log lines come last."""
    text = stderr.decode("utf-8", errors="replace").strip()
    if not text:
        return "(nothing on stderr)"
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n[... {len(text) - head - tail} characters ...]\n{text[-tail:]}"


def _safe(name: str, limit: int = 80) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".")[:limit] or "x"


def _split_frames(data: bytes) -> list[dict[str, Any]]:
    """Every whole frame in ``data`` (a one-shot agent's stdout); ValueError on a bad one."""
    frames, offset = [], 0
    while offset + 8 <= len(data):
        end = offset + 8 + frame_length(data[offset : offset + 8])
        if end > len(data):
            break  # cut short: the frames before it still count
        frames.append(decode_frame(data[offset + 8 : end]))
        offset = end
    return frames


class _SessionEnded(Exception):
    """The session's stdout closed: the agent process is gone."""


class AgentClient:
    """Runs jobs on one board through ``transport``.

    ``python``: the board's interpreter (default: the transport's). ``sessions``: one persistent
    agent for all jobs (True) or one process per job. ``adapter_dirs``: extra folders of adapter
    modules deployed beside the board package's, with the host's own (a same-named module
    replaces the board package's).
    ``margin_s``: added to a job's own timeouts before the host gives up on the agent, so the
    agent's watchdog fires first and reports. ``keep_jobs``: leave job directories behind (remote
    and local) for inspection.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        python: str | None = None,
        sessions: bool = True,
        adapter_dirs: Sequence[str | os.PathLike[str]] = (),
        model_cache_size: int = 4,
        margin_s: float = 15.0,
        start_timeout_s: float = 60.0,
        keep_jobs: bool = False,
        scratch: str | os.PathLike[str] | None = None,
        verbose: bool = False,
    ) -> None:
        self.transport = transport
        self.python = python or transport.python
        self.sessions = sessions
        self.adapter_dirs = [Path(d) for d in adapter_dirs]
        self.model_cache_size = model_cache_size
        self.margin_s = margin_s
        self.start_timeout_s = start_timeout_s
        self.keep_jobs = keep_jobs
        self.verbose = verbose
        self._own_scratch = scratch is None
        # Job inputs are written here and results read back: a folder of ours alone.
        self.scratch = private_dir(scratch or tempfile.mkdtemp(prefix="npu-hil-jobs-"))
        self._agent_path: PurePosixPath | None = None
        self._session: Session | None = None
        self._model_shas: dict[tuple[str, int, int], str] = {}
        self._deployed_models: set[str] = set()
        self.sessions_started = 0
        self.agent_pid: int | None = None
        self.last_exit: int | None = None  # how the last session ended (Popen-style)
        self.hello: dict[str, Any] = {}
        self._manifest: dict[str, str] = {}
        self.repairs = 0  # damaged agent bundles found on the board and replaced

    # --- deployment ------------------------------------------------------------------------------

    def _bundle(self) -> dict[str, bytes]:
        """The bundle's files by their path in it: the whole board package, then the extras."""
        files = {
            f"{BUNDLE_PACKAGE}/{source.relative_to(BOARD_SOURCE).as_posix()}": source.read_bytes()
            for source in sorted(BOARD_SOURCE.rglob("*.py"))
        }
        for folder in [HOST_ADAPTERS, *self.adapter_dirs]:
            # A folder's __init__.py makes it a package of the harness; no adapter.
            for source in sorted(p for p in folder.glob("*.py") if p.name != "__init__.py"):
                files[f"{EXTRA_ADAPTERS}/{source.name}"] = source.read_bytes()
        return files

    def deploy(self) -> PurePosixPath:
        """Put the agent and its adapters on the board (once per content) and return the remote
        path of the agent: the package folder, which ``python3 <path> --session`` runs. The
        directory is named by the bundle's sha256 and marked complete last, so a half-copied
        bundle is never used and an unchanged one is never copied."""
        if self._agent_path is not None:
            return self._agent_path
        files = self._bundle()
        manifest = {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())}
        bundle = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()
        folder = PurePosixPath(AGENT_DIR) / bundle[:16]
        self._manifest = manifest
        if not self.transport.exists(folder / _COMPLETE):
            log.info("deploying agent bundle %s to %s", bundle[:16], self.transport.workdir)
            with tempfile.TemporaryDirectory(prefix="npu-hil-deploy-") as tmp:
                for name, data in files.items():
                    local = Path(tmp, name)
                    local.parent.mkdir(parents=True, exist_ok=True)
                    local.write_bytes(data)
                    self.transport.put(local, folder / name)
                marker = Path(tmp, _COMPLETE)
                marker.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
                self.transport.put(marker, folder / _COMPLETE)
        self._agent_path = folder / BUNDLE_PACKAGE
        return self._agent_path

    def _damaged(self, hello: Mapping[str, Any]) -> list[str]:
        """The deployed files whose sha256 on the board (the agent's hello) is not what was
        deployed: the cache is trusted by name only after this check."""
        remote = hello.get("bundle")
        if not isinstance(remote, dict):
            return []
        return sorted(name for name, sha in self._manifest.items() if remote.get(name) != sha)

    def _repair(self, damaged: list[str], repaired: bool) -> None:
        """Remove a damaged bundle so the next deploy copies it afresh (once: a bundle that is
        damaged again right after is something on the board, not the link)."""
        assert self._agent_path is not None
        if repaired:
            raise DeviceError(
                f"the agent bundle on the board is damaged again after a fresh copy "
                f"({', '.join(damaged)}); something on the board changes it"
            )
        log.warning("agent bundle on the board is damaged (%s); copying it again", damaged)
        self.transport.cleanup(self._agent_path.parent)
        self._agent_path = None
        self.repairs += 1
        self.deploy()

    def _model_sha(self, path: Path) -> str:
        # Hashing a large artifact for every job would dominate small jobs; a file whose size and
        # mtime did not change is the same artifact.
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key not in self._model_shas:
            self._model_shas[key] = sha256_file(str(path))
        return self._model_shas[key]

    def deploy_model(self, model: str | os.PathLike[str]) -> ModelRef:
        """Put a model artifact into the board's cache (once per content); the returned path is
        relative to the cache, which is the agent's ``--root``."""
        path = Path(model)
        sha = self._model_sha(path)
        relative = f"{sha}/{_safe(path.name)}"
        remote = PurePosixPath(CACHE_DIR) / relative
        if relative not in self._deployed_models:
            if not self.transport.exists(remote):
                self.transport.put(path, remote)
            self._deployed_models.add(relative)
        return ModelRef(relative, sha)

    def _forget_model(self, model: ModelRef) -> None:
        """The board's copy of a model did not hash to its name (the agent refused it): remove
        it, so the next job (the plugin's retry) copies it afresh instead of meeting it again."""
        log.warning("model %s in the board's cache is damaged; it is copied again", model.path)
        self._deployed_models.discard(model.path)
        try:
            self.transport.cleanup(PurePosixPath(CACHE_DIR) / model.path)
        except TransportError as exc:
            log.warning("could not remove the damaged model: %s", exc)

    # --- jobs ------------------------------------------------------------------------------------

    def _host_timeout(self, spec: JobSpec) -> float:
        # The agent may spend a load timeout creating the adapter and another loading the model.
        # Each warm-up and timed run is one runtime call under the run timeout.
        calls = max(1, spec.runs + spec.warmup)
        return 2 * spec.load_timeout_s + calls * spec.run_timeout_s + self.margin_s

    def submit(self, spec: JobSpec, inputs: Mapping[str, Any] | Sequence[Any]) -> Result:
        """Run one job and return its verified result."""
        self.deploy()
        model = self.deploy_model(spec.model)
        local_job = self.scratch / f"{_safe(spec.job_id)}-{uuid.uuid4().hex[:8]}"
        write_job(local_job, spec, inputs, model=model)
        remote_job = PurePosixPath(JOBS_DIR) / local_job.name
        try:
            self._put_job(local_job, remote_job)
            if self.sessions:
                document = self._session_job(spec, remote_job)
            else:
                document = self._oneshot_job(spec, remote_job, local_job)
            for name in result_files(document, f"job {spec.job_id}: {RESULT_FILE}"):
                self.transport.get(remote_job / name, local_job / name)
            if (
                self.sessions
                and document.get("errors")
                and not self.transport.exists(remote_job / RESULT_FILE)
            ):
                # The agent could not write result.json (a full disk: its errors say so); the
                # answer it sent is the result.
                (local_job / RESULT_FILE).write_text(json.dumps(document), encoding="utf-8")
            elif self.sessions:
                self.transport.get(remote_job / RESULT_FILE, local_job / RESULT_FILE)
            result = read_result(local_job, job_id=spec.job_id)
            if any(e.field == "model.sha256" and e.reason == "checksum" for e in result.errors):
                self._forget_model(model)
            if self.sessions and result.document != document:
                raise TransportError(
                    f"job {spec.job_id}: {RESULT_FILE} as fetched differs from what the agent "
                    "answered; damaged on the way"
                )
            return result
        finally:
            if not self.keep_jobs:
                self._discard(local_job, remote_job)

    def _put_job(self, local_job: Path, remote_job: PurePosixPath) -> None:
        files = sorted(p for p in local_job.rglob("*") if p.is_file())
        # job.json last: a job directory that has one is complete.
        files.sort(key=lambda p: p.name == "job.json")
        for path in files:
            self.transport.put(path, remote_job / path.relative_to(local_job).as_posix())

    def _discard(self, local_job: Path, remote_job: PurePosixPath) -> None:
        shutil.rmtree(local_job, ignore_errors=True)
        try:
            if self._session is not None:
                # The running agent removes it: one frame, where the transport would start a
                # remote process (over SSH a channel and a login shell: most of a small job).
                self._request({"op": "discard", "dir": str(remote_job)}, 30.0, "discard")
            else:
                self.transport.cleanup(remote_job)
        except (TransportError, DeviceError, ProtocolError) as exc:
            # Never hide the job's own outcome behind this.
            log.warning("could not remove %s on the board: %s", remote_job, exc)

    def _oneshot_job(
        self, spec: JobSpec, remote_job: PurePosixPath, local_job: Path
    ) -> dict[str, Any]:
        argv = [self.python, str(self.deploy()), str(remote_job), "--root", CACHE_DIR]
        completed = self.transport.run(
            argv, timeout=self._host_timeout(spec) + self.start_timeout_s
        )
        if not self.transport.exists(remote_job / RESULT_FILE) and completed.returncode >= 0:
            number = errno_in_text(completed.stderr)
            if number is not None and number != errno.ENOENT:
                # It could not write its result: the board's disk, said by its name.
                raise board_os_error(
                    f"job {spec.job_id}: the agent wrote no result", number, _tail(completed.stderr)
                )
        if not self.transport.exists(remote_job / RESULT_FILE):
            raise _agent_ended(
                f"job {spec.job_id}: the agent ended with {_describe_exit(completed.returncode)} "
                f"and wrote no result; stderr: {_tail(completed.stderr)}",
                completed.returncode,
            )
        self.transport.get(remote_job / RESULT_FILE, local_job / RESULT_FILE)
        where = f"job {spec.job_id}: {RESULT_FILE}"
        return parse_result_document((local_job / RESULT_FILE).read_bytes(), where)

    # --- the session -----------------------------------------------------------------------------

    def _start_session(self, repaired: bool = False) -> Session:
        argv = [
            self.python,
            str(self.deploy()),
            "--session",
            "--root",
            CACHE_DIR,
            "--model-cache",
            str(self.model_cache_size),
        ]
        if self.verbose:
            argv.append("--verbose")
        session = self.transport.open_session(argv)
        self.sessions_started += 1
        try:
            hello = self._read_frame(session, self.start_timeout_s)
        except _SessionEnded:
            ended = session.close()
            raise _agent_ended(
                f"the agent session did not start ({_describe_exit(ended.returncode)}); "
                f"stderr: {_tail(ended.stderr)}",
                ended.returncode,
            ) from None
        except TransportError as exc:
            ended = session.close(timeout=0)
            raise TransportError(
                f"the agent session did not say hello: {exc}; stderr: {_tail(ended.stderr)}"
            ) from None
        protocol = parse_schema(hello.get("protocol"))
        if (
            hello.get("op") != "hello"
            or protocol is None
            or protocol[0] != SESSION_PROTOCOL_NAME
            or protocol[1] != SCHEMA_MAJOR
        ):
            session.close(timeout=0)
            raise ProtocolError(
                f"the agent greeted with {hello!r}; this harness speaks "
                f"{SESSION_PROTOCOL_NAME}/{SCHEMA_MAJOR}"
            )
        damaged = self._damaged(hello)
        if damaged:
            session.close(timeout=0)
            self._repair(damaged, repaired)
            return self._start_session(repaired=True)
        self.hello = hello
        pid = hello.get("pid")
        self.agent_pid = pid if isinstance(pid, int) else None
        log.info("agent session %s started (%s)", self.agent_pid, hello.get("python"))
        return session

    def _ensure_session(self) -> Session:
        if self._session is None:
            self._session = self._start_session()
        return self._session

    def _drop_session(self, timeout: float = 0.0) -> str:
        """Close the current session (killing it after ``timeout``); say how it ended."""
        session, self._session = self._session, None
        self.agent_pid = None
        if session is None:
            return "no session"
        ended = session.close(timeout=timeout)
        self.last_exit = ended.returncode
        return f"{_describe_exit(ended.returncode)}; stderr: {_tail(ended.stderr)}"

    def _recv_exactly(self, session: Session, n: int, deadline: float) -> bytes:
        chunks: list[bytes] = []
        remaining = n
        while remaining:
            chunk = session.recv(remaining, max(0.0, deadline - time.monotonic()))
            if not chunk:
                raise _SessionEnded
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def _read_frame(self, session: Session, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        header = self._recv_exactly(session, FRAME_HEADER.size, deadline)
        try:
            length = frame_length(header)
            return decode_frame(self._recv_exactly(session, length, deadline))
        except (ValueError, UnicodeDecodeError) as exc:
            raise TransportError(f"the agent session stream is corrupted: {exc}") from None

    def _request(self, message: dict[str, Any], timeout: float, what: str) -> dict[str, Any]:
        """Send one request and wait for its response; the one place frames go on the wire."""
        if not self.sessions:
            response = self._oneshot_request(message, timeout, what)
        else:
            response = self._session_request(message, timeout, what)
        if response.get("op") != message["op"]:
            self._drop_session()
            raise ProtocolError(f"{what}: asked {message['op']!r}, the agent answered {response!r}")
        if response.get("restart"):
            # The agent reported a stuck runtime call and is exiting on its own.
            log.warning("%s: the agent asked for a restart (%s)", what, self._drop_session(5.0))
        if "error" in response:
            raise error_record(response["error"], f"{what}: error").exception(f"{what}: ")
        return response

    def _session_request(
        self, message: dict[str, Any], timeout: float, what: str
    ) -> dict[str, Any]:
        session = self._ensure_session()
        try:
            session.send(encode_frame(message))
            return self._read_frame(session, timeout)
        except _SessionEnded:
            self.last_exit = None
            how = self._drop_session(timeout=5.0)
            raise _agent_ended(f"{what}: the agent session died ({how})", self.last_exit) from None
        except TransportError as exc:
            how = self._drop_session()
            raise TransportError(
                f"{what}: no answer from the agent within {timeout:.0f} s ({exc}); the session "
                f"was killed ({how}) and a new one starts with the next request"
            ) from None

    def _oneshot_request(
        self, message: dict[str, Any], timeout: float, what: str, repaired: bool = False
    ) -> dict[str, Any]:
        """Without a persistent session (``sessions=False``) a request is a session of its own:
        the agent reads the request and a shutdown from stdin, and its frames (hello, answer,
        goodbye) come back as one command's stdout."""
        argv = [self.python, str(self.deploy()), "--session", "--root", CACHE_DIR]
        stdin = encode_frame(message) + encode_frame({"op": "shutdown"})
        done = self.transport.run(argv, timeout=timeout + self.start_timeout_s, stdin=stdin)
        try:
            frames = _split_frames(done.stdout)
        except ValueError as exc:
            raise ProtocolError(f"{what}: the answer is not npu-hil frames: {exc}") from None
        if len(frames) < 2:
            raise _agent_ended(
                f"{what}: the agent ended before answering ({_describe_exit(done.returncode)}); "
                f"stderr: {_tail(done.stderr)}",
                done.returncode,
            )
        damaged = self._damaged(frames[0])
        if damaged:
            self._repair(damaged, repaired)
            return self._oneshot_request(message, timeout, what, repaired=True)
        self.hello = frames[0]
        return frames[1]

    def _session_job(self, spec: JobSpec, remote_job: PurePosixPath) -> dict[str, Any]:
        what = f"job {spec.job_id}"
        response = self._request(
            {"op": "job", "dir": str(remote_job)}, self._host_timeout(spec), what
        )
        document = response.get("result")
        if not isinstance(document, dict):
            raise ProtocolError(f"{what}: the agent's answer has no result: {response!r}")
        return document

    def ping(self, timeout: float = 30.0) -> dict[str, Any]:
        """Ask the session whether it is alive: pid, jobs run, cached model sha256s."""
        self.deploy()
        return self._request({"op": "ping"}, timeout, "ping")

    def versions(
        self, adapter: str, options: Mapping[str, Any] | None = None, timeout: float = 300.0
    ) -> dict[str, Any]:
        """Runtime, driver and SDK versions of an adapter on the board, plus Python and numpy."""
        self.deploy()
        response = self._request(
            {"op": "versions", "adapter": adapter, "options": dict(options or {})},
            timeout,
            f"versions of {adapter}",
        )
        versions = response.get("versions")
        if not isinstance(versions, dict):
            raise ProtocolError(f"versions of {adapter}: unexpected answer {response!r}")
        return versions

    def memory(self, timeout: float = 30.0) -> dict[str, Any]:
        """The agent's own memory (RSS, high-water mark) and the board's CMA and DMA-buffer
        figures, as :func:`harness.board.memory.read_memory` reads them (absent ones listed)."""
        self.deploy()
        response = self._request({"op": "memory"}, timeout, "memory")
        memory = response.get("memory")
        if not isinstance(memory, dict) or not isinstance(memory.get("process"), dict):
            raise ProtocolError(f"memory: unexpected answer {str(response)[:200]}")
        return memory

    def close(self, timeout: float = 30.0) -> None:
        """Shut the session down (the agent releases its models) and remove the scratch space."""
        if self._session is not None:
            try:
                self._request({"op": "shutdown"}, timeout, "shutdown")
            except (TransportError, DeviceError, ProtocolError) as exc:
                log.warning("agent session did not shut down cleanly: %s", exc)
            self._drop_session(timeout=5.0)
        if self._own_scratch and not self.keep_jobs:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
