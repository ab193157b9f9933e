"""AgentClient: the host's handle on the board agent through any Transport: deploys it, sends
models, runs jobs (one frame each way) through a resident or a one-shot agent. The remote layout
and the outcomes of ``submit``: docs/runtime/agent.md ("How the host side works")."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import signal
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from npu_hil.harness.errors import AgentKilledError, DeviceError

if TYPE_CHECKING:
    from npu_hil.harness.board.documents import MemoryJson

# Imported for its registration: an agent's stream over a serial console is this side's code.
from npu_hil.harness import board
from npu_hil.harness.agent import serial_stream  # noqa: F401
from npu_hil.harness.agent.protocol import (
    FRAMED_JOBS,
    BulkAnswer,
    JobSpec,
    ModelRef,
    Replay,
    Result,
    StreamEnded,
    bulk_request,
    error_record,
    frame_job,
    read_frame,
    result_from_document,
)
from npu_hil.harness.board.loader import EXTRA_ADAPTERS
from npu_hil.harness.board.wire import (
    AGENT_PROTOCOL_NAME,
    SCHEMA_MAJOR,
    encode_frame,
    parse_schema,
    sha256_file,
)
from npu_hil.harness.errors import ProtocolError, TransportError
from npu_hil.harness.transport.base import Stream, Transport
from npu_hil.harness.transport.serial_console import SerialTransport

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
# A model chunk's size: over a socket a chunk costs one round trip; over a serial console a
# damaged one costs its resend (the relay resends a whole request), so it stays small there.
MODEL_CHUNK = 8 << 20
CONSOLE_MODEL_CHUNK = 64 << 10
# A model chunk is sent again at most this many times in a row before the link is given up.
CHUNK_TRIES = 3
# Bytes a second a model chunk is allowed at the least, on top of the start-up timeout.
MIN_MODEL_RATE = 16 << 10


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "exit status unknown"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def agent_ended(message: str, returncode: int | None) -> DeviceError:
    """The error for an agent that ended without answering: killed by a signal is
    infrastructure (AgentKilledError), any other end the runtime's (DeviceError)."""
    if returncode is not None and returncode < 0:
        return AgentKilledError(message, signal=-returncode)
    return DeviceError(message)


def tail(stderr: bytes, head: int = 1500, tail: int = 2500) -> str:
    """The start and the end of a process's stderr: a crash report (Python's fault handler) puts
    the crashing thread's stack first, the last log lines come last."""
    text = stderr.decode("utf-8", errors="replace").strip()
    if not text:
        return "(nothing on stderr)"
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n[... {len(text) - head - tail} characters ...]\n{text[-tail:]}"


def safe_name(name: str, limit: int = 80) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".")[:limit] or "x"


class AgentClient:
    """Runs jobs on one board through ``transport``.

    ``python``: the board's interpreter (default: the transport's). ``resident``: one resident agent
    serves all jobs (True) or each job starts an agent of its own (a one-shot agent; ``sessions``,
    the old name, still works this release with a DeprecationWarning). ``adapter_dirs``: extra
    folders of adapter modules deployed beside the board package's, with the host's own (a
    same-named module replaces the board package's). ``margin_s``: added to a job's own timeouts
    before the host gives up on the agent, so the agent's watchdog fires first and reports.
    ``keep_jobs``: keep each job's files on the board for inspection: the agent writes them into
    ``jobs/<job id>-<nonce>/`` after the job ran.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        python: str | None = None,
        resident: bool = True,
        adapter_dirs: Sequence[str | os.PathLike[str]] = (),
        model_cache_size: int = 4,
        margin_s: float = 15.0,
        start_timeout_s: float = 60.0,
        keep_jobs: bool = False,
        verbose: bool = False,
        sessions: bool | None = None,
    ) -> None:
        if sessions is not None:
            warnings.warn(
                "AgentClient(sessions=...) is deprecated; use resident=... (the same meaning)",
                DeprecationWarning,
                stacklevel=2,
            )
            resident = sessions
        self.transport = transport
        self.python = python or transport.python
        self.resident = resident
        self.adapter_dirs = [Path(d) for d in adapter_dirs]
        self.model_cache_size = model_cache_size
        self.margin_s = margin_s
        self.start_timeout_s = start_timeout_s
        self.keep_jobs = keep_jobs
        # Where the host's time went in the last framed job: framing and hashing the inputs,
        # the round trip (the agent's own time included), verifying the answer.
        self.last_job_host_s: dict[str, float] = {}
        self.verbose = verbose
        self._agent_path: PurePosixPath | None = None
        self._stream: Stream | None = None
        self._model_shas: dict[tuple[str, int, int], str] = {}
        self._deployed_models: set[str] = set()
        # Models whose copy on the board did not hash to its name: dropped there when next sent.
        self._stale_models: set[str] = set()
        # A model travels in chunks of this size, each sent again when it arrives damaged: over
        # a serial console a resend costs seconds a chunk, over a socket nothing to speak of.
        self.model_chunk_bytes = (
            CONSOLE_MODEL_CHUNK if isinstance(transport, SerialTransport) else MODEL_CHUNK
        )
        self.model_bytes_sent = 0
        self.agents_started = 0
        self.agent_pid: int | None = None
        self.last_exit: int | None = None  # how the last agent ended (Popen-style)
        self.hello: dict[str, Any] = {}
        self._manifest: dict[str, str] = {}
        self.repairs = 0  # damaged agent bundles found on the board and replaced
        # What the client found on the board (damaged and mended, or a kept view that could not
        # be written), for the report (taken).
        self.events: list[str] = []

    # --- jobs ------------------------------------------------------------------------------------

    def _host_timeout(self, spec: JobSpec) -> float:
        # The agent may spend a load timeout creating the adapter and another loading the model.
        # Each warm-up and timed run is one runtime call under the run timeout.
        calls = max(1, spec.runs + spec.warmup)
        return 2 * spec.load_timeout_s + calls * spec.run_timeout_s + self.margin_s

    def submit(self, spec: JobSpec, inputs: Mapping[str, Any] | Sequence[Any]) -> Result:
        """Run one job and return its verified result. A model whose copy in the board's
        cache no longer hashes to its name (a flipped bit, a torn copy) is the cache's damage,
        not the board's: it is copied again and the job run once more, and :attr:`events`
        says so."""
        self.deploy()
        model, ahead = self._model_ahead(spec.model)
        result = self._submit(spec, inputs, model, ahead)
        if _model_damaged(result):  # _forget_model marked the board's copy to be dropped
            self.events.append(
                f"model {model.path} in the board's cache did not hash to its name; "
                "copied again and the job rerun"
            )
            model = self.deploy_model(spec.model)
            result = self._submit(spec, inputs, model)
        return result

    def take_events(self) -> list[str]:
        """The events since the last call (each reported once)."""
        taken, self.events = self.events, []
        return taken

    def _submit(
        self,
        spec: JobSpec,
        inputs: Mapping[str, Any] | Sequence[Any],
        model: ModelRef,
        ahead: ModelAhead | None = None,
    ) -> Result:
        if self.resident:
            self._ensure_agent()  # its hello says what the agent reads
            if FRAMED_JOBS not in (self.hello.get("features") or ()):
                raise ProtocolError(
                    f"the agent does not read framed jobs (its features: "
                    f"{self.hello.get('features')!r}); this harness sends jobs only as frames"
                )
        what = f"job {spec.job_id}"
        started = time.perf_counter()
        document, buffers = frame_job(spec, inputs, model)
        request: dict[str, Any] = {"op": "job", "job": document}
        if self.keep_jobs:
            # The agent writes the job's files there after it ran, for inspection.
            kept = f"{JOBS_DIR}/{safe_name(spec.job_id)}-{uuid.uuid4().hex[:8]}"
            request["keep"] = kept
            log.info("job %s: its files are kept on the board in %s", spec.job_id, kept)
        sent = time.perf_counter()
        if ahead is None:
            response, answer = self._exchange(request, self._host_timeout(spec), what, buffers)
        else:
            # The model and the job in one exchange; the job's answer is read whatever came of
            # the model, so the stream stays in step.
            outgoing = [
                Outgoing(ahead.message, [memoryview(ahead.data)]),
                Outgoing(request, buffers),
            ]
            timeout = self._host_timeout(spec) + len(ahead.data) / MIN_MODEL_RATE
            for_model, for_job = self._exchange_all(outgoing, timeout, what)
            self._checked(ahead.message, for_model, f"model {model.path}")
            if not self._arrived(ahead, for_model[0]):
                return self._submit(spec, inputs, self.deploy_model(spec.model))
            response, answer = self._checked(request, for_job, what)
        answered = time.perf_counter()
        result_document = response.get("result")
        if not isinstance(result_document, dict):
            raise ProtocolError(f"{what}: the agent's answer has no result: {response!r}")
        if response.get("kept_error"):
            # Asked for and not there: the report says so among the board's events.
            kept = f"{what}: its files could not be kept on the board: {response['kept_error']}"
            self.events.append(kept)
            log.warning("%s", kept)
        result = result_from_document(
            result_document,
            answer,
            where=f"{what}: the answer",
            job_id=spec.job_id,
        )
        if _model_damaged(result):
            self._forget_model(model)
        self.last_job_host_s = {
            "encode_s": sent - started,
            "exchange_s": answered - sent,
            "decode_s": time.perf_counter() - answered,
        }
        return result

    # --- deploying the agent and the models ------------------------------------------------------

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
        path of the agent: the package folder, which ``python3 <path> --serve`` runs. The
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
        relative to the cache, which is the agent's ``--root``. The model travels in the
        agent's stream as a job does, :attr:`model_chunk_bytes` per frame
        (:mod:`npu_hil.harness.board.modelstore` on the board): a cut link resumes where it
        stopped, and a damaged chunk is sent again, at most ``CHUNK_TRIES`` times in a
        row."""
        ref, path, name = self._model_ref(model)
        if ref.path not in self._deployed_models:
            self._send_model(path, ref.sha256, name, replace=ref.path in self._stale_models)
            self._model_held(ref)
        return ref

    def _model_ahead(self, model: str | os.PathLike[str]) -> tuple[ModelRef, ModelAhead | None]:
        """The model of a job, and what goes ahead of the job in the same exchange: a model the
        board may not hold yet that fits in one chunk travels whole, before the job, so it
        costs no round trip (over a serial console, no relay run) of its own; a larger one is
        sent first, the checked way (:meth:`deploy_model`)."""
        ref, path, name = self._model_ref(model)
        if ref.path in self._deployed_models:
            return ref, None
        if path.stat().st_size > self.model_chunk_bytes:
            return self.deploy_model(path), None
        data = path.read_bytes()
        message: dict[str, object] = {"op": "model", "sha256": ref.sha256, "name": name}
        message.update(size=len(data), offset=0, replace=ref.path in self._stale_models)
        self.model_bytes_sent += len(data)
        return ref, ModelAhead(ref, message, data)

    def _arrived(self, ahead: ModelAhead, response: Mapping[str, object]) -> bool:
        """Whether the model sent ahead of a job is in the board's cache now (else, damaged on
        the way, it is sent again the checked way and the job run again)."""
        if _held(response, len(ahead.data)) != len(ahead.data):
            log.warning("model %s arrived damaged; sent again", ahead.ref.path)
            return False
        self._model_held(ahead.ref)
        return True

    def _model_ref(self, model: str | os.PathLike[str]) -> tuple[ModelRef, Path, str]:
        path = Path(model)
        sha = self._model_sha(path)
        name = safe_name(path.name)
        return ModelRef(f"{sha}/{name}", sha), path, name

    def _model_held(self, ref: ModelRef) -> None:
        self._stale_models.discard(ref.path)
        self._deployed_models.add(ref.path)

    def _send_model(self, path: Path, sha: str, name: str, replace: bool) -> None:
        size = path.stat().st_size
        what = f"model {path.name}"
        ask: dict[str, object] = {"op": "model", "sha256": sha, "name": name, "size": size}
        have = _held(self._request(dict(ask, replace=replace), self.start_timeout_s, what), size)
        tries = 0
        with path.open("rb") as handle:
            while have < size:
                handle.seek(have)
                chunk = handle.read(min(self.model_chunk_bytes, size - have))
                if len(chunk) != min(self.model_chunk_bytes, size - have):
                    raise TransportError(f"{what}: the file changed while it was sent")
                timeout = self.start_timeout_s + len(chunk) / MIN_MODEL_RATE
                sent = dict(ask, offset=have)
                answer, _ = self._exchange(sent, timeout, what, [memoryview(chunk)])
                held = _held(answer, size)
                self.model_bytes_sent += len(chunk)
                tries = tries + 1 if held <= have else 0
                if tries >= CHUNK_TRIES:
                    raise TransportError(
                        f"{what}: the chunk at byte {have} did not arrive intact in "
                        f"{CHUNK_TRIES} tries"
                    )
                if answer.get("damaged"):
                    log.warning("%s: the chunk at byte %d arrived damaged; sent again", what, have)
                have = held

    def _forget_model(self, model: ModelRef) -> None:
        """The board's copy of a model did not hash to its name (the agent refused it): the next
        job (the plugin's retry) has the board drop it and copies it afresh instead of meeting
        it again."""
        log.warning("model %s in the board's cache is damaged; it is copied again", model.path)
        self._deployed_models.discard(model.path)
        self._stale_models.add(model.path)

    # --- the resident agent ----------------------------------------------------------------------

    def _agent_argv(self) -> list[str]:
        """The agent serving framed requests on stdin/stdout, models cached in ``cache/``
        (deployed first: every request starts here)."""
        return [self.python, str(self.deploy()), "--serve", "--root", CACHE_DIR]

    def _start_agent(self, repaired: bool = False) -> Stream:
        argv = [*self._agent_argv(), "--model-cache", str(self.model_cache_size)]
        if self.verbose:
            argv.append("--verbose")
        opener: Callable[[Sequence[str]], Stream] | None
        opener = getattr(self.transport, "open_stream", None)
        if opener is None:  # a transport written before the name changed
            warnings.warn(
                f"{type(self.transport).__name__}.open_session is deprecated; name it open_stream",
                DeprecationWarning,
                stacklevel=2,
            )
            opener = self.transport.open_session  # type: ignore[attr-defined]
        stream = opener(argv)
        self.agents_started += 1
        try:
            hello, _ = read_frame(stream, self.start_timeout_s)
        except StreamEnded:
            ended = stream.close()
            raise agent_ended(
                f"the agent did not start ({describe_exit(ended.returncode)}); "
                f"stderr: {tail(ended.stderr)}",
                ended.returncode,
            ) from None
        except TransportError as exc:
            ended = stream.close(timeout=0)
            raise TransportError(
                f"the agent did not say hello: {exc}; stderr: {tail(ended.stderr)}"
            ) from None
        protocol = parse_schema(hello.get("protocol"))
        if (
            hello.get("op") != "hello"
            or protocol is None
            or protocol[0] != AGENT_PROTOCOL_NAME
            or protocol[1] != SCHEMA_MAJOR
        ):
            stream.close(timeout=0)
            raise ProtocolError(
                f"the agent greeted with {hello!r}; this harness speaks "
                f"{AGENT_PROTOCOL_NAME}/{SCHEMA_MAJOR}"
            )
        damaged = self._damaged(hello)
        if damaged:
            stream.close(timeout=0)
            self._repair(damaged, repaired)
            return self._start_agent(repaired=True)
        self.hello = hello
        pid = hello.get("pid")
        self.agent_pid = pid if isinstance(pid, int) else None
        log.info("agent %s started (%s)", self.agent_pid, hello.get("python"))
        return stream

    @property
    def running(self) -> bool:
        """Whether a resident agent is running (a closed client starts one with its next job)."""
        return self._stream is not None

    def _ensure_agent(self) -> Stream:
        if self._stream is None:
            self._stream = self._start_agent()
        return self._stream

    def _drop_agent(self, timeout: float = 0.0) -> str:
        """Close the resident agent's stream (killing it after ``timeout``); say how it ended."""
        stream, self._stream = self._stream, None
        self.agent_pid = None
        if stream is None:
            return "no agent"
        ended = stream.close(timeout=timeout)
        self.last_exit = ended.returncode
        return f"{describe_exit(ended.returncode)}; stderr: {tail(ended.stderr)}"

    def _request(
        self, message: Mapping[str, object], timeout: float, what: str
    ) -> dict[str, object]:
        """Send one request and wait for its response."""
        return self._exchange(message, timeout, what)[0]

    def _exchange(
        self,
        message: Mapping[str, object],
        timeout: float,
        what: str,
        buffers: list[memoryview] | None = None,
    ) -> tuple[dict[str, object], BulkAnswer | None]:
        """Send one request (with ``buffers``: as a bulk frame) and wait for its response and
        the buffers it carries."""
        (answered,) = self._exchange_all([Outgoing(message, buffers)], timeout, what)
        return self._checked(message, answered, what)

    def _checked(
        self, message: Mapping[str, object], answered: Answered, what: str
    ) -> tuple[dict[str, object], BulkAnswer | None]:
        """The response to ``message``, or the exception its error record stands for."""
        response = answered[0]
        if response.get("op") != message["op"]:
            self._drop_agent()
            raise ProtocolError(f"{what}: asked {message['op']!r}, the agent answered {response!r}")
        if response.get("restart"):
            # The agent reported a stuck runtime call and is exiting on its own.
            log.warning("%s: the agent asked for a restart (%s)", what, self._drop_agent(5.0))
        if "error" in response:
            raise error_record(response["error"], f"{what}: error").exception(f"{what}: ")
        return answered

    def _exchange_all(
        self, requests: Sequence[Outgoing], timeout: float, what: str
    ) -> list[Answered]:
        """Send ``requests`` back to back and read their answers, in order: the one place frames
        go on the wire. Several requests are one exchange (over a serial console, one relay
        run); each answer is checked by its caller (:meth:`_checked`)."""
        if not self.resident:
            wire = b"".join(_pieces(requests))
            return self._oneshot_request(wire, len(requests), timeout, what)
        return self._resident_request(requests, timeout, what)

    def _resident_request(
        self, requests: Sequence[Outgoing], timeout: float, what: str
    ) -> list[Answered]:
        stream = self._ensure_agent()
        started = time.monotonic()
        answers = len(requests)
        try:
            for piece in _pieces(requests):
                stream.send(piece)
            return [read_frame(stream, timeout) for _ in range(answers)]
        except StreamEnded:
            self.last_exit = None
            how = self._drop_agent(timeout=5.0)
            raise agent_ended(f"{what}: the agent died ({how})", self.last_exit) from None
        except TransportError as exc:
            elapsed = time.monotonic() - started
            how = self._drop_agent()
            # The time that passed, not the one allowed: a link lost after a second is no
            # "no answer within 600 s".
            waited = (
                f"no answer from the agent within {timeout:.0f} s"
                if elapsed >= timeout
                else f"no answer from the agent after {elapsed:.1f} s (of {timeout:.0f} s allowed)"
            )
            raise TransportError(
                f"{what}: {waited} ({exc}); the agent was killed ({how}) and a new one starts "
                "with the next request",
                errno=exc.errno,
            ) from None

    def _oneshot_request(
        self, wire: bytes, answers: int, timeout: float, what: str, repaired: bool = False
    ) -> list[Answered]:
        """Without a resident agent (``resident=False``) each exchange starts an agent of its
        own: the agent reads the requests and a shutdown from stdin, and its frames (hello, the
        answers, goodbye) come back as one command's stdout, read as a resident agent's stream
        is."""
        argv = self._agent_argv()
        stdin = wire + encode_frame({"op": "shutdown"})
        done = self.transport.run(argv, timeout=timeout + self.start_timeout_s, stdin=stdin)
        replay = Replay(done.stdout)
        try:
            hello, _ = read_frame(replay, timeout)
            damaged = self._damaged(hello)
            if damaged:
                self._repair(damaged, repaired)
                return self._oneshot_request(wire, answers, timeout, what, repaired=True)
            self.hello = hello
            return [read_frame(replay, timeout) for _ in range(answers)]
        except StreamEnded:
            if done.returncode == 0:
                # The agent answered and left as asked: what is missing was lost on the way.
                raise TransportError(
                    f"{what}: the agent's answer came cut short (it exited 0 after answering); "
                    f"stderr: {tail(done.stderr)}"
                ) from None
            raise agent_ended(
                f"{what}: the agent ended before answering ({describe_exit(done.returncode)}); "
                f"stderr: {tail(done.stderr)}",
                done.returncode,
            ) from None

    def ping(self, timeout: float = 30.0) -> dict[str, object]:
        """Ask the agent whether it is alive: pid, jobs run, cached model sha256s."""
        return self._request({"op": "ping"}, timeout, "ping")

    def versions(
        self, adapter: str, options: Mapping[str, object] | None = None, timeout: float = 300.0
    ) -> dict[str, str]:
        """Runtime, driver and SDK versions of an adapter on the board, plus Python and numpy."""
        response = self._request(
            {"op": "versions", "adapter": adapter, "options": dict(options or {})},
            timeout,
            f"versions of {adapter}",
        )
        versions = response.get("versions")
        if not isinstance(versions, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in versions.items()
        ):
            raise ProtocolError(f"versions of {adapter}: unexpected answer {response!r}")
        return versions

    def memory(self, timeout: float = 30.0) -> MemoryJson:
        """The agent's own memory (RSS, high-water mark) and the board's CMA and DMA-buffer
        figures, as :func:`npu_hil.harness.board.boardstate.read_memory` reads them (absent ones
        listed)."""
        response = self._request({"op": "memory"}, timeout, "memory")
        memory = response.get("memory")
        if not isinstance(memory, dict) or not isinstance(memory.get("process"), dict):
            raise ProtocolError(f"memory: unexpected answer {str(response)[:200]}")
        return cast("MemoryJson", memory)

    def close(self, timeout: float = 30.0) -> None:
        """Shut the resident agent down (it releases its models)."""
        if self._stream is not None:
            try:
                self._request({"op": "shutdown"}, timeout, "shutdown")
            except (TransportError, DeviceError, ProtocolError) as exc:
                log.warning("the agent did not shut down cleanly: %s", exc)
            self._drop_agent(timeout=5.0)

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Outgoing(NamedTuple):
    """A request on its way: the message, and the buffers of a bulk frame (None: a plain one)."""

    message: Mapping[str, object]
    buffers: list[memoryview] | None = None


Answered = tuple[dict[str, object], "BulkAnswer | None"]
"""An answer as read: its message and, from a bulk frame, its buffers."""


def _pieces(requests: Sequence[Outgoing]) -> Iterator[bytes]:
    """The requests' frames as pieces to send in turn (a large input is never joined)."""
    for message, buffers in requests:
        if buffers is None:
            yield encode_frame(message)
        else:
            yield from bulk_request(message, buffers)


def _model_damaged(result: Result) -> bool:
    """The agent refused the job's model: its copy does not hash to the sha256 it is filed by."""
    return any(e.field == "model.sha256" and e.reason == "checksum" for e in result.errors)


class ModelAhead(NamedTuple):
    """A model sent whole ahead of its job, in the same exchange: its reference, the request
    that carries it and its bytes."""

    ref: ModelRef
    message: dict[str, object]
    data: bytes


def _held(answer: Mapping[str, object], size: int) -> int:
    """The bytes of a model the board holds, from its answer to a ``model`` request."""
    have = answer.get("have")
    if not isinstance(have, int) or isinstance(have, bool) or not 0 <= have <= size:
        raise ProtocolError(f"a model request: expected 'have' in 0..{size}, got {answer!r}")
    return have
