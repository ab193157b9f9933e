"""A job's result document and its records of the device buffers, and how a kept job's files
are written (``--keep-remote``). The document: ``docs/runtime/agent.md`` (The result document).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from .folders import UnsafeFolder, check_folder, job_folder
from .job import JobRefused
from .wire import JOB_FILE, JOBS_FOLDER, RESULT_FILE, jsonable

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
    return os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8")


def device_bytes(tensor: TensorOut) -> np.ndarray:
    """A device buffer's bytes as the runtime holds them, whatever its dtype (flat uint8)."""
    return np.ascontiguousarray(tensor.data).reshape(-1).view(np.uint8)


def describe_tensor(filename: str, tensor: TensorOut, flat: np.ndarray) -> TensorJson:
    """The result's record of a device buffer, but its sha256: the buffer goes back in a bulk
    frame, whose trailer carries it, computed as it is written (the host puts it in the record)."""
    return {
        "name": str(tensor.name),
        "file": filename,
        "nbytes": int(flat.size),
        "layout": str(tensor.layout),
        "dtype": str(tensor.dtype),
        "shape": [int(d) for d in tensor.shape],
        "attributes": json.loads(json.dumps(tensor.attributes or {}, default=jsonable)),
    }


def new_kept_dir(value: Any) -> str:
    """The folder a framed job's files are kept in for inspection (the host's ``keep``): exactly
    ``jobs/<name>`` in the workdir, made here, new, and this user's own, so a request cannot
    make the agent write anywhere else (JobRefused). An OSError is the board's disk (full,
    read-only): the job runs without its view."""
    folder = job_folder(value)
    if folder is None:
        raise JobRefused("keep", "path", f"{value!r} is not a job folder under {JOBS_FOLDER}/")
    os.makedirs(JOBS_FOLDER, mode=0o700, exist_ok=True)  # an OSError: the disk's, said as such
    try:
        check_folder(JOBS_FOLDER)
    except UnsafeFolder as exc:
        raise JobRefused("keep", "unsafe", str(exc)) from None
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        # Never into a folder or a link planted under that name: a kept view is always new.
        raise JobRefused("keep", "path", f"{value!r} exists already") from None
    return folder


def write_kept_view(
    folder: str, doc: object, inputs: list[Any], result: ResultJson, device: list[memoryview]
) -> OSError | None:
    """A job's files for a person to read, written after it ran: job.json (the document, each
    input naming its file), ``input_<i>.bin``, the device buffers under the names
    the result's records give, and result.json. A view for a person to read: the job itself never
    touched the disk, and a view that cannot be written (a full disk) costs the job nothing."""
    try:
        document = dict(doc) if isinstance(doc, dict) else {"job": doc}
        given = document.get("inputs")
        if isinstance(given, list):
            document["inputs"] = [
                dict(item, file=f"input_{index}.bin") if isinstance(item, dict) else item
                for index, item in enumerate(given)
            ]
        for index, data in enumerate(inputs):
            with create_new(os.path.join(folder, f"input_{index}.bin"), "wb") as handle:
                handle.write(data)
        records = [*result["inputs"], *result["outputs"]]
        for record, data in zip(records, device):  # noqa: B905 - the records own the buffers
            with create_new(os.path.join(folder, os.path.basename(record["file"])), "wb") as f:
                f.write(data)
        with create_new(os.path.join(folder, JOB_FILE), "w") as handle:
            json.dump(document, handle, indent=1, default=jsonable)
    except OSError as exc:
        return exc
    # result.json last and atomically: a reader never sees half a file.
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
