"""The pipeline's check before deploying: does the compiled model go with the board's runtime
versions (:func:`npu_hil.targets.compatibility.check_compatibility`)? A refusal is a
CompatibilityError, nothing deployed. What is checked where: docs/model-developer/preflight.md."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import onnx

from npu_hil.harness.errors import NpuHilError, TransportError
from npu_hil.harness.farm.session import BoardSession
from npu_hil.harness.models import ManifestError
from npu_hil.targets.artifact import ArtifactInfo, read_artifact
from npu_hil.targets.compatibility import check_compatibility, refusal

__all__ = ["board_versions", "check_after_run", "check_before_deploy"]

log = logging.getLogger(__name__)


def artifact_of(
    session: BoardSession, model: str | os.PathLike[str] | onnx.ModelProto, deployed: Path
) -> Path | None:
    """The compiled artifact the check reads: what a real board loads when it is one of the
    target's compiled formats; on a simulated board, the artifact the manifest lists for the
    board's target when the model is named there and the file exists."""
    from npu_hil.targets.registry import unit_for

    if not session.simulated:
        return deployed
    if Path(deployed).suffix.lower() in unit_for(session.target).artifact_suffixes:
        return deployed
    if session.manifest_path is None or not isinstance(model, str):
        return None
    try:
        manifest = session.manifest
    except ManifestError as exc:
        # A simulated board never needs the manifest: a broken one must not stop its runs.
        log.info("%s: no compiled artifact checked (%s)", session.name, exc)
        return None
    entry = manifest.models.get(model) if manifest is not None else None
    listed = entry.artifact(session.target) if entry is not None else None
    return listed if listed is not None and listed.is_file() else None


def stand_in_versions(session: BoardSession) -> dict[str, str]:
    """The runtime versions a simulated board stands in for (its ``runtime_versions`` option,
    a runtime matrix of simulated boards): held to the table as a real runtime's are. Empty for
    a real board and a plain simulated one."""
    if not session.simulated:
        return {}
    given = session.adapter_options.get("runtime_versions")
    return {str(k): str(v) for k, v in given.items()} if isinstance(given, Mapping) else {}


def board_versions(session: BoardSession) -> dict[str, Any]:
    """The versions the board's adapter reports (runtime, driver, SDK), asked of its agent. An
    adapter that cannot say is an empty answer: the check then reports the versions unknown.
    A lost link is the caller's (retried like any infrastructure failure)."""
    try:
        return dict(session.client.versions(session.adapter, session.adapter_options))
    except TransportError:
        raise
    except NpuHilError as exc:  # the adapter refused (a DeviceError, an unsupported option...)
        log.info("%s: the %s adapter reported no versions: %s", session.name, session.adapter, exc)
        return {}


def check_before_deploy(
    session: BoardSession, model: str | os.PathLike[str] | onnx.ModelProto, deployed: Path
) -> tuple[ArtifactInfo | None, tuple[dict[str, str], ...]]:
    """(what the artifact says, the findings); raises CompatibilityError when one refuses the
    run, and ArtifactError when the artifact is not what its suffix claims. ``(None, ())`` when
    the run deploys no compiled artifact (an ONNX model on a simulated board)."""
    path = artifact_of(session, model, deployed)
    if path is None:
        return None, ()
    info = read_artifact(path, session.target)
    if info is None:
        return None, ()
    stand_in = stand_in_versions(session)
    versions = stand_in or ({} if session.simulated else board_versions(session))
    simulated = session.simulated and not stand_in
    findings = check_compatibility(info, session.target, versions, simulated=simulated)
    error = refusal(info, session.target, session.name, versions, findings)
    if error is not None:
        raise error
    return info, tuple(f.to_dict() for f in findings)


def check_after_run(
    session: BoardSession, info: ArtifactInfo | None, versions: Mapping[str, Any]
) -> tuple[dict[str, str], ...]:
    """The findings for the versions a finished run reported (None info: nothing to check). A
    refusal here does not undo the run: it is a finding of its record."""
    if info is None or (session.simulated and not stand_in_versions(session)):
        return ()
    findings = check_compatibility(info, session.target, versions)
    return tuple(f.to_dict() for f in findings)
