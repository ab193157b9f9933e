"""Putting the agent and the models on a board: content-addressed, checked, repaired once.

The agent bundle (the board package ``npu_hil/harness/board`` and the extra adapters) goes into
``agent/<sha256[:16]>/`` and is marked complete last, so a half-copied bundle is never used and an
unchanged one is never copied; the agent's hello lists the sha256 of every file as the board has
it, and a damaged bundle is replaced once. Models go into ``cache/<sha256>/<name>``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from npu_hil.harness import board
from npu_hil.harness.agent.exits import safe_name
from npu_hil.harness.agent.jobspec import ModelRef
from npu_hil.harness.board.loader import EXTRA_ADAPTERS
from npu_hil.harness.board.wire import sha256_file
from npu_hil.harness.errors import DeviceError, TransportError
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


class Deployment:
    """The deployment half of :class:`~npu_hil.harness.agent.client.AgentClient`."""

    transport: Transport
    adapter_dirs: list[Path]
    _agent_path: PurePosixPath | None
    _manifest: dict[str, str]
    _model_shas: dict[tuple[str, int, int], str]
    _deployed_models: set[str]
    repairs: int

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
        relative to the cache, which is the agent's ``--root``."""
        path = Path(model)
        sha = self._model_sha(path)
        relative = f"{sha}/{safe_name(path.name)}"
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
