"""Putting the agent and the models on a board: content-addressed, checked, repaired once
(docs/runtime/agent.md). The bundle is the one thing the transport copies as files: nothing on
the board reads frames before it is there; models then travel in the agent's stream, in chunks."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, NamedTuple

from npu_hil.harness import board
from npu_hil.harness.agent.exits import safe_name
from npu_hil.harness.agent.jobspec import ModelRef
from npu_hil.harness.board.loader import EXTRA_ADAPTERS
from npu_hil.harness.board.wire import sha256_file
from npu_hil.harness.errors import DeviceError, ProtocolError, TransportError
from npu_hil.harness.transport.base import Transport

__all__ = [
    "AGENT_DIR",
    "BOARD_SOURCE",
    "BUNDLE_PACKAGE",
    "CACHE_DIR",
    "HOST_ADAPTERS",
    "JOBS_DIR",
    "Deployment",
]

log = logging.getLogger("npu_hil.harness.agent.client")

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


class Deployment:
    """The deployment half of :class:`~npu_hil.harness.agent.client.AgentClient`."""

    transport: Transport
    adapter_dirs: list[Path]
    _agent_path: PurePosixPath | None
    _manifest: dict[str, str]
    _model_shas: dict[tuple[str, int, int], str]
    _deployed_models: set[str]
    _stale_models: set[str]
    model_chunk_bytes: int
    model_bytes_sent: int
    start_timeout_s: float
    repairs: int

    if TYPE_CHECKING:  # the client's, which this half sends models through

        def _request(
            self, message: Mapping[str, object], timeout: float, what: str
        ) -> dict[str, object]: ...

        def _exchange(
            self,
            message: Mapping[str, object],
            timeout: float,
            what: str,
            buffers: list[memoryview] | None = None,
        ) -> tuple[dict[str, object], Any]: ...

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
        message: dict[str, object] = {
            "op": "model",
            "sha256": ref.sha256,
            "name": name,
            "size": len(data),
            "offset": 0,
            "replace": ref.path in self._stale_models,
        }
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
