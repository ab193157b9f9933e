"""The view of a job's files kept on the board when the host asks (``--keep-remote``).

A job travels in frames and touches no disk; when its request asks to ``keep`` its files, the
agent writes them after it ran into a new ``jobs/<name>/`` for a person to read: job.json,
``input_<i>.bin``, the device buffers and result.json. A view that cannot be written costs the job
nothing.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from .folders import UnsafeFolder, check_folder, job_folder
from .job import JobRefused
from .results import create_new, write_result
from .wire import JOB_FILE, JOBS_FOLDER, jsonable

if TYPE_CHECKING:
    from .documents import ResultJson


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
    folder: str,
    doc: object,
    inputs: list[Any],
    result: ResultJson,
    device: list[memoryview],
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
    return write_result(folder, result)
