"""A job's result document and its records of the device buffers, and how a kept job's files
are written.

result.json (``npu-hil-result/1``)::

    {"schema", "job_id", "ok", "adapter", "versions", "errors": [record],
     "timings": {"load_s", "run_s", "copy_s", "total_s", "model_cached"[, "adapter"],
                 "runs", "warmup", "runs_s": [s per timed run][, "adapter_runs_s": [s]]},
     "board_state": {"before": state, "after": state} (see boardstate),
     "canary": {"pattern": hex, "outputs": bool, "inputs": bool, "reason"} (a job with one),
     "board_log": {"kernel": {"source", "lines"[, "why", "dropped", "lost"]},
                   "runtime": {"source", "lines", "level", "env"[, "why", "dropped"]}},
     "inputs"/"outputs": [{"name", "file", "sha256", "nbytes", "layout", "dtype", "shape",
                           "attributes"}]}

with the device input buffers named ``in_<i>.bin`` and the outputs ``out_<i>.bin``: the buffers
of the answer's bulk frame, and the files of a kept job's view. Every file is created new, never
through a link, and result.json appears whole or not at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from .wire import RESULT_FILE, jsonable

if TYPE_CHECKING:
    from .adapters.base import TensorOut
    from .documents import ResultJson, TensorJson

log = logging.getLogger("npu-hil-agent")


def create_new(path: str, mode: str) -> Any:
    """Open ``path`` for writing as a new file that cannot be anything planted there: what sits
    at the name (a stale file or a symlink) is unlinked, which never touches a link's target, and
    the file is created with ``O_EXCL | O_NOFOLLOW``, so a link planted in between makes the open
    fail instead of writing through it."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o666)
    if "b" in mode:
        return os.fdopen(fd, mode)
    return os.fdopen(fd, mode, encoding="utf-8")


def device_bytes(tensor: TensorOut) -> np.ndarray:
    """A device buffer's bytes as the runtime holds them, whatever its dtype (flat uint8)."""
    return np.ascontiguousarray(tensor.data).reshape(-1).view(np.uint8)


def describe_tensor(
    filename: str, tensor: TensorOut, flat: np.ndarray, digest: bool = True
) -> TensorJson:
    """The result's record of a device buffer: its bytes hashed once, here, unless they go back
    in a bulk frame (``digest`` False), whose trailer carries the sha256 computed as it is
    written (the host puts it in the record)."""
    record: TensorJson = {
        "name": str(tensor.name),
        "file": filename,
        "nbytes": int(flat.size),
        "layout": str(tensor.layout),
        "dtype": str(tensor.dtype),
        "shape": [int(d) for d in tensor.shape],
        "attributes": json.loads(json.dumps(tensor.attributes or {}, default=jsonable)),
    }
    if digest:
        record["sha256"] = hashlib.sha256(flat.data).hexdigest()
    return record


def write_result(folder: str, result: ResultJson) -> OSError | None:
    """Write result.json atomically (the host never sees half a file); the OSError when the
    directory is not writable, full or missing, else None."""
    path = os.path.join(folder, RESULT_FILE)
    tmp = path + ".tmp"
    try:
        with create_new(tmp, "w") as handle:
            json.dump(result, handle, indent=1, default=jsonable)
        # A rename replaces the name itself: a symlink planted as result.json is not followed.
        os.replace(tmp, path)
    except OSError as exc:
        log.error("cannot write %s: %s", path, exc)
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # half a file on a full disk holds space the next job needs
        return exc
    return None
