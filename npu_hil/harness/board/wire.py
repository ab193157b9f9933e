"""The agent's wire format, imported by both sides so that they cannot drift apart: schema names,
file names, frame payloads, exit statuses, error records (``docs/runtime/agent.md``, Frames and
requests). Standard library only (no numpy): importing it costs the host and the relay nothing."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

# Re-exported: the host reads frames through this module alone.
from .frames import BULK_CHUNK as BULK_CHUNK
from .frames import BULK_PREFIX as BULK_PREFIX
from .frames import DIGEST_BYTES as DIGEST_BYTES
from .frames import FRAME_HEADER as FRAME_HEADER
from .frames import MAX_FRAME_BYTES as MAX_FRAME_BYTES
from .frames import bulk_header
from .frames import frame_length as frame_length
from .frames import is_bulk as is_bulk
from .frames import whole_frames as whole_frames

if TYPE_CHECKING:
    from .documents import ErrorJson

JOB_SCHEMA_NAME = "npu-hil-job"
RESULT_SCHEMA_NAME = "npu-hil-result"
AGENT_PROTOCOL_NAME = "npu-hil-agent"
SCHEMA_MAJOR = 1
JOB_SCHEMA = f"{JOB_SCHEMA_NAME}/{SCHEMA_MAJOR}"
RESULT_SCHEMA = f"{RESULT_SCHEMA_NAME}/{SCHEMA_MAJOR}"
AGENT_PROTOCOL = f"{AGENT_PROTOCOL_NAME}/{SCHEMA_MAJOR}"
AGENT_VERSION = "1.0"

JOB_FILE = "job.json"
RESULT_FILE = "result.json"
JOBS_FOLDER = "jobs"

# What the agent reads: a request is a few hundred bytes, so a client cannot make it buffer more
# than this, and no document it parses (a request and the job it carries) may nest deeper.
MAX_REQUEST_BYTES = 1 << 20
MAX_JSON_DEPTH = 32

SCHEMA_RE = re.compile(r"([a-z0-9-]+)/([0-9]+)(?:\.([0-9]+))?\Z")

# A job's status in its answer, and the agent's own exit status (what each means: the page).
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2
EXIT_TIMEOUT = 3


def parse_schema(value: object) -> tuple[str, int, int] | None:
    """``"npu-hil-job/1.2"`` -> ``("npu-hil-job", 1, 2)``; None when it is not a schema string
    (minor versions only add optional fields: readers accept any minor of their major)."""
    if not isinstance(value, str):
        return None
    match = SCHEMA_RE.match(value)
    if match is None:
        return None
    return match.group(1), int(match.group(2)), int(match.group(3) or 0)


def encode_frame(message: Mapping[str, object]) -> bytes:
    """One frame: the 8-byte big-endian length of the UTF-8 JSON payload, then the payload."""
    payload = json.dumps(message, separators=(",", ":"), default=jsonable).encode("utf-8")
    if len(payload) > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {len(payload)} bytes exceeds the {MAX_FRAME_BYTES}-byte cap")
    return FRAME_HEADER.pack(len(payload)) + payload


def encode_bulk_frame(
    message: Mapping[str, object], buffers: list[memoryview]
) -> Iterator[memoryview]:
    """One bulk frame as the parts to write in order: header and message (``message`` gets the
    buffers' sizes as ``"bulk"``), each buffer in pieces as it is (never copied into one), then
    the trailer of their sha256s. A generator: each piece is hashed just before it is handed to
    the writer, so the digest costs no pass of its own."""
    views = [b.cast("B") if b.ndim != 1 or b.itemsize != 1 else b for b in buffers]
    sizes = [v.nbytes for v in views]
    payload = json.dumps({**message, "bulk": sizes}, separators=(",", ":"), default=jsonable)
    encoded = payload.encode("utf-8")
    total = sum(sizes) + DIGEST_BYTES * len(views)
    yield memoryview(bulk_header(len(encoded), total) + encoded)
    digests = []
    for view in views:
        digest = hashlib.sha256()
        for start in range(0, len(view), BULK_CHUNK):
            piece = view[start : start + BULK_CHUNK]
            digest.update(piece)
            yield piece
        digests.append(digest.digest())
    yield memoryview(b"".join(digests))


def bulk_sizes(message: Mapping[str, object], rest: int) -> list[int]:
    """The buffer sizes a bulk frame's message announces, checked against the ``rest`` of the
    frame (the buffers and the trailer); ValueError when they do not add up."""
    sizes = message.get("bulk")
    if not isinstance(sizes, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in sizes
    ):
        raise ValueError(f"a bulk frame's message gives no buffer sizes (bulk: {sizes!r})"[:300])
    if sum(sizes) + DIGEST_BYTES * len(sizes) != rest:
        raise ValueError(
            f"a bulk frame's buffers ({sum(sizes)} bytes in {len(sizes)}) and digests do not "
            f"fill the {rest} bytes after its message"
        )
    return sizes


def nested_deeper(document: Any, max_depth: int) -> bool:
    """Whether a parsed JSON document nests objects and arrays deeper than ``max_depth``.
    A level at a time, so a deep document cannot exhaust the stack here either; each level's
    children are gathered by ``list.extend`` (a tuple per value made this walk a third of the
    time of reading a 12,000-case history file)."""
    level = [document] if isinstance(document, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            return True
        below: list[Any] = []
        for value in level:
            below.extend(value.values() if isinstance(value, dict) else value)
        level = [v for v in below if isinstance(v, (dict, list))]
    return False


def decode_frame(payload: bytes) -> dict[str, object]:
    """The JSON object of a frame payload, its values unchecked; ValueError when it is not one,
    or nests deeper than MAX_JSON_DEPTH (whether the parser itself ran out of stack or not)."""
    try:
        message = json.loads(payload.decode("utf-8"))
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    if nested_deeper(message, MAX_JSON_DEPTH):
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(message, dict):
        raise ValueError(f"frame payload is {type(message).__name__}, not a JSON object")
    return message


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def jsonable(value: Any) -> Any:
    """Make runtime attributes JSON: numpy scalars and arrays, bytes (hex), sets, anything else by
    ``str`` so one odd attribute cannot lose the whole result. numpy is not imported here: a
    numpy value exists only where numpy was loaded."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.generic):
        return value.item()
    if np is not None and isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return str(value)


def failure(kind: str, stage: str, message: str, **extra: object) -> ErrorJson:
    """An error record; extras that are None are left out."""
    record: dict[str, object] = {"type": kind, "stage": stage, "message": message}
    record.update({k: v for k, v in extra.items() if v is not None})
    return cast("ErrorJson", record)


def os_error_record(exc: OSError, stage: str) -> ErrorJson:
    """An OS error on the board (a full or read-only disk, a denied write) as a record that
    names it: ``errno`` and ``errno_name`` (``ENOSPC``) beside the message, which reads as the
    transports' own do (``ENOSPC (No space left on device) on the board``)."""
    number = exc.errno
    name = errno.errorcode.get(number) if number is not None else None
    reason = os.strerror(number) if number is not None else str(exc)
    where = exc.filename if exc.filename is not None else ""
    text = f"{name or 'OSError'} ({reason}) on the board"
    if where:
        text += f" ({os.path.basename(str(where))})"
    return failure("OSError", stage, text, errno=number, errno_name=name)
