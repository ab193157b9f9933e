"""A job as it came in a frame, and the view of its files kept on the board when asked.

A job (``{"op": "job", "job": {...}}`` in a bulk frame of the session) has its document and input
buffers in the request and sends the device buffers back in the answer's frame: nothing of it
touches the board's disk, so a job costs no file system work and a full or read-only disk does
not stop it. The document is checked by :func:`job.validate_job`; an input's bytes are checked
against their announced size and the sha256 the frame's trailer gives (computed by the stream as
they arrived) before they are used. A job whose request asks to ``keep`` its files has them
written after it ran, into a new ``jobs/<name>/`` (:func:`write_kept_view`): ``--keep-remote``'s
view.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from .folders import UnsafeFolder, check_folder, job_folder
from .job import Job, JobInput, JobRefused, validate_job
from .results import create_new, describe_tensor, device_bytes, write_result
from .wire import JOB_FILE, JOBS_FOLDER, jsonable

if TYPE_CHECKING:
    from .adapters.base import TensorOut


class FramedJob:
    """A job that came as one bulk frame: its document, its input buffers (hashed by the frame
    stream as they arrived) and the indices of those whose sha256 was not the sender's."""

    def __init__(self, doc: Any, buffers: list[Any], damaged: tuple[int, ...]) -> None:
        self.doc = doc
        self.inputs = buffers
        self.damaged = damaged
        self._by_name: dict[str, bytearray] = {}
        # The device buffers to send back, in the order of the result's records.
        self.buffers: list[memoryview] = []

    def document(self) -> dict[str, Any]:
        if not isinstance(self.doc, dict):
            raise JobRefused("job", "type", f"expected a job document, got {self.doc!r}"[:300])
        return self.doc

    def validate(self, doc: dict[str, Any], root: str | None, adapter_dirs: list[str]) -> Job:
        job = validate_job(doc, root, adapter_dirs)
        if len(self.inputs) != len(job.inputs):
            raise JobRefused(
                "inputs",
                "size",
                f"the frame carries {len(self.inputs)} buffers for {len(job.inputs)} inputs",
            )
        for index, (item, data) in enumerate(zip(job.inputs, self.inputs)):  # noqa: B905
            if len(data) != item.nbytes:
                raise JobRefused(
                    f"inputs[{index}].nbytes",
                    "size",
                    f"the frame's buffer holds {len(data)} bytes; the input announces "
                    f"{item.nbytes}",
                )
            if index in self.damaged:
                raise JobRefused(
                    f"inputs[{index}].sha256",
                    "checksum",
                    f"the buffer arrived with another sha256 than its sender's "
                    f"({item.nbytes} bytes)",
                )
            self._by_name[item.spec.name] = data
        return job

    def input_bytes(self, item: JobInput) -> np.ndarray:
        # The frame's own buffer: the bytes are not copied again.
        return np.frombuffer(self._by_name[item.spec.name], dtype=np.uint8)

    def emit(self, filename: str, tensor: TensorOut) -> dict[str, Any]:
        flat = device_bytes(tensor)
        self.buffers.append(flat.data)
        # The frame's trailer carries its sha256, computed as it is written.
        return describe_tensor(filename, tensor, flat, digest=False)

    def finish(self, result: dict[str, Any]) -> None:
        # Exactly the buffers the result describes, in its order (a run that failed while its
        # buffers were described has records for some of them only).
        del self.buffers[len(result["inputs"]) + len(result["outputs"]) :]


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
    doc: Any,
    inputs: list[Any],
    result: dict[str, Any],
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
        records = [r for key in ("inputs", "outputs") for r in result.get(key, [])]
        for record, data in zip(records, device):  # noqa: B905 - the records own the buffers
            with create_new(os.path.join(folder, os.path.basename(record["file"])), "wb") as f:
                f.write(data)
        with create_new(os.path.join(folder, JOB_FILE), "w") as handle:
            json.dump(document, handle, indent=1, default=jsonable)
    except OSError as exc:
        return exc
    return write_result(folder, result)
