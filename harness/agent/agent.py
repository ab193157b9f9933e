#!/usr/bin/env python3
"""npu-hil board agent: runs inference jobs on a board and writes back the raw device buffers.

This file is copied to a board as a plain file with an ``adapters/`` folder beside it. It runs on
Python >= 3.8 with the standard library and numpy, and imports nothing from ``harness`` (boards ship
old Pythons and never get the harness installed). The host side of the protocol
(``harness.agent.protocol``) imports the schema constants and frame helpers from here, so the two
sides cannot drift.

Usage::

    python3 agent.py JOB_DIR [--root CACHE_DIR] [--adapters DIR]...
    python3 agent.py --session [--root CACHE_DIR] [--adapters DIR]... [--model-cache N]
    python3 agent.py --listen SOCKET [--idle-timeout S] [--read-timeout S] [--max-connections N]
                     [--root CACHE_DIR] [--adapters DIR]...

Job protocol (``npu-hil-job/1`` in, ``npu-hil-result/1`` out; a reader accepts any minor version
of its major and refuses another major). job.json::

    {"schema", "job_id", "model": {"path", "sha256"}, "adapter": [a-z0-9_]+, "adapter_options",
     "inputs": [{"name", "file", "layout", "shape", "dtype", "pass_through"}], "outputs": [..]|null,
     "timeouts": {"load": s, "run": s}}

Paths are relative to the job directory (the model may also be relative to ``--root``, the model
cache) and may not leave it. result.json::

    {"schema", "job_id", "ok", "adapter", "versions", "errors": [record],
     "timings": {"load_s", "run_s", "copy_s", "total_s", "model_cached"[, "adapter"]},
     "inputs"/"outputs": [{"name", "file", "sha256", "nbytes", "layout", "dtype", "shape",
                           "attributes"}]}

with the device input buffers in ``in_<i>.bin`` and the outputs in ``out_<i>.bin``. An error record
is ``{"type", "stage", "message"}`` plus optional ``code``, ``field``, ``reason``, ``detail``;
types: ``JobError`` (stage ``validate``: the agent refused the job), ``DeviceError``,
``LayoutError``, ``UnsupportedError``, ``TimeoutError`` (from the adapter or the watchdog) and
``AgentError`` (a bug here). The load timeout bounds adapter creation, versions and model load;
the run timeout bounds the run.

One-shot mode runs the job in JOB_DIR and writes ``result.json`` plus the buffer blobs into it.
Exit status: 0 the job ran (runtime errors, if any, are typed records in result.json); 2 the agent
refused the job (the refusal is in result.json when the directory is writable); 3 an adapter call
timed out (recorded in result.json; the hung call is abandoned by exiting); 1 anything else.

Session mode serves jobs over stdin/stdout in frames: an 8-byte big-endian length, then that many
bytes of UTF-8 JSON. The agent speaks first with ``{"op": "hello", ...}``; requests are
``{"op": "job", "dir": D}``, ``{"op": "ping"}``, ``{"op": "versions", "adapter": A, "options":
{}}``, ``{"op": "discard", "dir": D}`` (remove a finished job's folder) and ``{"op": "shutdown"}``;
every request gets exactly one response frame with the same ``op`` and
either the payload (``result`` for a job) or ``error`` (a typed record). The session keeps adapter
instances per (name, options) and loaded models per (adapter, model sha256) in a small LRU, so a
board pays the start-up of Python, numpy, the runtime and the model load once per test session.
Nothing but frames goes to stdout: file descriptor 1 is pointed at stderr for the session's
lifetime, so a vendor library's printf cannot corrupt the stream. A request frame is at most
``MAX_REQUEST_BYTES`` (a longer one is refused unread and ends the stream) and nests at most
``MAX_JSON_DEPTH`` levels; a whole frame that holds no request is answered with a
``ProtocolError`` record and the session goes on. A job's ``dir`` is ``jobs/<name>`` in the
working directory, never anything else.

Folders: a resident agent starts only in a working directory (the board workdir) that is this
user's own, not a symlink and writable by nobody else, and the same for ``jobs/`` in it; the
refusal names owner and mode. Every file the agent writes is created new, never through a link.

Listen mode is session mode for a board whose link cannot hold a byte stream open beside its
control shell (a serial console): the agent runs in the background, binds a Unix stream socket at
SOCKET (mode 0600, relative to its working directory) and serves up to ``--max-connections``
clients at once, each on a thread of its own, with the same frames, a hello first on every
connection; their requests take turns, a client over the bound is told so and closed, and a
connection that sends no complete request for ``--read-timeout`` seconds is dropped, so a silent
client blocks nobody. Adapters and loaded models outlive connections:
the end of a connection is not a shutdown, ``{"op": "shutdown"}`` is (the agent answers, removes
the socket and exits). ``relay.py`` beside this file carries one batch of requests from a shell
command to the socket and back. With no connection for ``--idle-timeout`` seconds the agent exits
too, so a forgotten one does not live on. Nothing goes to stdout; the log goes to stderr.

Timeouts: every adapter call runs on one long-lived runtime thread (vendor runtimes may tie state to
the thread that created it) while the main thread waits with the job's timeout. A hung vendor call
cannot be interrupted from Python, so on expiry the agent records a ``TimeoutError``, writes
result.json, answers the pending request with ``"restart": true`` and exits with status 3; the host
starts a new session. A call that hangs while holding the GIL stops the watchdog too: the host's own
timeout (job timeouts plus a margin) is the backstop for that case.

Adapters: ``adapters/<name>.py`` defines ``ADAPTER``, a subclass of ``adapters.base.Adapter``. Extra
adapter folders (searched before the agent's own, used by the harness's tests for a fake adapter)
come from ``--adapters DIR`` (repeatable) or the ``NPU_HIL_AGENT_ADAPTERS`` environment variable
(``os.pathsep``-separated); adapters there may import ``adapters.base`` as usual.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import faulthandler
import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import logging
import math
import os
import platform
import queue
import re
import shutil
import socket
import stat
import struct
import sys
import threading
import time
import traceback
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Generic, NoReturn, TypeVar

import numpy as np

if TYPE_CHECKING:
    # Only for the type checker: on a board the same classes come from ``adapters/base.py`` beside
    # this file, imported at run time by ``_adapter_package``.
    from types import ModuleType

    from npu_hil.harness.agent.adapters.base import Adapter, InputTensor, TensorOut

# --- protocol constants (imported by npu_hil.harness.agent.protocol) ---------------------------

JOB_SCHEMA_NAME = "npu-hil-job"
RESULT_SCHEMA_NAME = "npu-hil-result"
SESSION_PROTOCOL_NAME = "npu-hil-session"
SCHEMA_MAJOR = 1
JOB_SCHEMA = f"{JOB_SCHEMA_NAME}/{SCHEMA_MAJOR}"
RESULT_SCHEMA = f"{RESULT_SCHEMA_NAME}/{SCHEMA_MAJOR}"
SESSION_PROTOCOL = f"{SESSION_PROTOCOL_NAME}/{SCHEMA_MAJOR}"
AGENT_VERSION = "1.0"

JOB_FILE = "job.json"
RESULT_FILE = "result.json"
JOBS_FOLDER = "jobs"

# A frame is an 8-byte big-endian length and then UTF-8 JSON. The cap makes a desynchronised
# stream (anything that is not a frame header) fail at once instead of waiting for exabytes.
FRAME_HEADER = struct.Struct(">Q")
MAX_FRAME_BYTES = 64 << 20
# What the agent reads: a request is a few hundred bytes, so a client cannot make it buffer more
# than this, and no document it parses (a request, a job.json) may nest deeper than this.
MAX_REQUEST_BYTES = 1 << 20
MAX_JSON_DEPTH = 32

# Refusal bounds for a job: far above any real NPU tensor, low enough that a hostile shape cannot
# make the agent allocate the board out of memory or overflow a size computation.
MAX_ELEMENTS = 2**31
MAX_RANK = 8
MAX_INPUTS = 256
# Bytes, not elements, bound what an input may take (2**31 float64 elements would be 16 GiB):
# checked against the file's size before a byte of it is read, pass-through inputs included.
MAX_INPUT_BYTES = 1 << 30
MAX_JOB_INPUT_BYTES = 2 << 30
MAX_JOB_JSON_BYTES = 4 << 20
MAX_TIMEOUT_S = 24 * 3600.0
DEFAULT_TIMEOUTS = {"load": 120.0, "run": 60.0}
DTYPES = (
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float16",
    "float32",
    "float64",
)
ADAPTER_NAME_RE = re.compile(r"[a-z0-9_]+\Z")
SHA256_RE = re.compile(r"[0-9a-f]{64}\Z")
SCHEMA_RE = re.compile(r"([a-z0-9-]+)/([0-9]+)(?:\.([0-9]+))?\Z")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2
EXIT_TIMEOUT = 3

ADAPTERS_ENV = "NPU_HIL_AGENT_ADAPTERS"
AGENT_DIR = os.path.dirname(os.path.abspath(__file__))

log = logging.getLogger("npu-hil-agent")

T = TypeVar("T")


# --- helpers shared with the host ----------------------------------------------------------------


def parse_schema(value: object) -> tuple[str, int, int] | None:
    """``"npu-hil-job/1.2"`` -> ``("npu-hil-job", 1, 2)``; None when it is not a schema string.

    Minor versions only add optional fields, so readers accept any minor of their major.
    """
    if not isinstance(value, str):
        return None
    match = SCHEMA_RE.match(value)
    if match is None:
        return None
    return match.group(1), int(match.group(2)), int(match.group(3) or 0)


def encode_frame(message: dict[str, Any]) -> bytes:
    """One frame: the 8-byte big-endian length of the UTF-8 JSON payload, then the payload."""
    payload = json.dumps(message, separators=(",", ":"), default=_jsonable).encode("utf-8")
    if len(payload) > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {len(payload)} bytes exceeds the {MAX_FRAME_BYTES}-byte cap")
    return FRAME_HEADER.pack(len(payload)) + payload


def frame_length(header: bytes) -> int:
    """The payload length announced by a frame header; ValueError when it cannot be one."""
    (length,) = FRAME_HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ValueError(
            f"frame header announces {length} bytes (cap {MAX_FRAME_BYTES}): "
            "the stream is not npu-hil frames"
        )
    return int(length)


def loads_bounded(text: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` that cannot be knocked over: a document nested deeper than ``max_depth``
    is a ValueError, whether the parser itself ran out of stack (RecursionError) or not."""
    try:
        document = json.loads(text)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {max_depth} levels") from None
    # Iterative, so a deep document cannot exhaust the stack here either.
    pending = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, (dict, list)):
            if depth > max_depth:
                raise ValueError(f"JSON nested deeper than {max_depth} levels")
            children = value.values() if isinstance(value, dict) else value
            pending.extend((child, depth + 1) for child in children)
    return document


def decode_frame(payload: bytes) -> dict[str, Any]:
    """The JSON object of a frame payload; ValueError when it is not one."""
    message = loads_bounded(payload.decode("utf-8"))
    if not isinstance(message, dict):
        raise ValueError(f"frame payload is {type(message).__name__}, not a JSON object")
    return message


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _jsonable(value: Any) -> Any:
    """Make runtime attributes JSON: numpy scalars and arrays, bytes (hex), sets, anything else by
    ``str`` so one odd attribute cannot lose the whole result."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return str(value)


def os_error_record(exc: OSError, stage: str) -> dict[str, Any]:
    """An OS error on the board (a full or read-only disk, a denied write) as a record that
    names it: ``errno`` and ``errno_name`` (``ENOSPC``) beside the message."""
    number = exc.errno
    name = errno.errorcode.get(number) if number is not None else None
    reason = os.strerror(number) if number is not None else str(exc)
    where = exc.filename if exc.filename is not None else ""
    text = f"{name or 'OSError'}: {reason}"
    if where:
        text += f" ({os.path.basename(str(where))})"
    return _error("OSError", stage, text, errno=number, errno_name=name)


def _error(kind: str, stage: str, message: str, **extra: Any) -> dict[str, Any]:
    record = {"type": kind, "stage": stage, "message": message}
    record.update({k: v for k, v in extra.items() if v is not None})
    return record


# --- folders of our own --------------------------------------------------------------------------


class UnsafeFolder(Exception):
    """A folder the agent would run code from or write into that another user could change."""


def folder_problem(path: str, st_mode: int, st_uid: int, euid: int) -> str | None:
    """Why ``path`` (its ``lstat`` mode and owner) is not a folder this user alone controls, or
    None when it is one: it must be a real folder (not a symlink), owned by ``euid`` and writable
    by nobody else. The host applies the same rule to its own folders and to a board's workdir,
    so there is one definition of a safe folder. The message names the owner and the mode."""
    owner = f"owner uid {st_uid}, mode {stat.S_IMODE(st_mode):04o}"
    if stat.S_ISLNK(st_mode):
        return f"{path} is a symbolic link ({owner}); expected a folder of uid {euid}'s own"
    if not stat.S_ISDIR(st_mode):
        return f"{path} is not a folder ({owner})"
    if st_uid != euid:
        return (
            f"{path} is owned by another user ({owner}), not by uid {euid}: "
            "they could change what runs from it; remove it or use another folder"
        )
    if st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"{path} is writable by group or others ({owner}): another user could change "
            "what runs from it; chmod 700 it or use another folder"
        )
    return None


def check_folder(path: str) -> None:
    """UnsafeFolder unless ``path`` is a folder of this user's own (see :func:`folder_problem`)."""
    info = os.lstat(path)
    problem = folder_problem(path, info.st_mode, info.st_uid, os.geteuid())
    if problem is not None:
        raise UnsafeFolder(problem)


def check_workdir(path: str) -> None:
    """The agent's working directory (the board workdir) and the ``jobs/`` folder in it, when
    there is one, must be this user's own: the host deploys code there and reads results back."""
    check_folder(path)
    jobs = os.path.join(path, JOBS_FOLDER)
    if os.path.lexists(jobs):
        check_folder(jobs)


# --- job validation ------------------------------------------------------------------------------


class JobRefused(Exception):
    """A job.json the agent will not run. ``field`` names the offending field, ``reason`` is a
    short machine-readable class (``checksum`` and ``size`` mean a file's content does not match
    what the host announced, which the host treats as a corrupted transfer)."""

    def __init__(self, field: str, reason: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = reason

    def record(self) -> dict[str, Any]:
        return _error("JobError", "validate", str(self), field=self.field, reason=self.reason)


class InputSpec:
    def __init__(
        self,
        name: str,
        path: str,
        layout: str,
        shape: list[int],
        dtype: str,
        pass_through: bool,
        nbytes: int = 0,
    ) -> None:
        self.name = name
        self.path = path
        self.layout = layout
        self.shape = shape
        self.dtype = dtype
        self.pass_through = pass_through
        self.nbytes = nbytes  # the file's size as checked: never read past it


class Job:
    """A validated job: every path resolved and confined, every number bounded."""

    def __init__(
        self,
        job_id: str,
        adapter: str,
        options: dict[str, Any],
        model_path: str,
        model_sha256: str,
        inputs: list[InputSpec],
        outputs: list[str] | None,
        timeouts: dict[str, float],
    ) -> None:
        self.job_id = job_id
        self.adapter = adapter
        self.options = options
        self.model_path = model_path
        self.model_sha256 = model_sha256
        self.inputs = inputs
        self.outputs = outputs
        self.timeouts = timeouts


def _within(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


def _check_relative(field: str, value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise JobRefused(field, "path", f"expected a relative file path, got {value!r}")
    if "\x00" in value:
        raise JobRefused(field, "path", f"{value!r} contains a NUL byte")
    if value.startswith(("/", "\\")) or os.path.isabs(value):
        raise JobRefused(
            field, "path", f"{value!r} is an absolute path; paths are relative to {where}"
        )
    if ".." in re.split(r"[/\\]", value):
        raise JobRefused(field, "path", f"{value!r} leaves {where}")
    return value


def confine(field: str, value: object, base: str, where: str = "the job directory") -> str:
    """Resolve a relative path inside ``base`` (already a realpath) and refuse anything that leaves
    it: absolute paths, ``..`` components, symlinks pointing outside. Returns the real path."""
    rel = _check_relative(field, value, where)
    full = os.path.realpath(os.path.join(base, rel))
    if not _within(full, base):
        raise JobRefused(
            field, "path", f"{rel!r} leaves {where} through a symlink (it resolves to {full})"
        )
    return full


def _regular_file(field: str, rel: str, full: str, where: str) -> None:
    if not os.path.exists(full):
        raise JobRefused(field, "missing", f"{rel!r} does not exist in {where}")
    if not os.path.isfile(full):
        raise JobRefused(field, "path", f"{rel!r} is not a regular file")


def _require(obj: dict[str, Any], field: str, key: str, kind: type, what: str) -> Any:
    if key not in obj:
        raise JobRefused(field + key, "missing", f"required {what} is missing")
    value = obj[key]
    # bool is an int in Python; a JSON true is never a valid number here.
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise JobRefused(field + key, "type", f"expected {what}, got {value!r}")
    return value


def _shape(field: str, value: object) -> list[int]:
    if not isinstance(value, list):
        raise JobRefused(field, "shape", f"expected a list of dimensions, got {value!r}")
    if len(value) > MAX_RANK:
        raise JobRefused(field, "shape", f"rank {len(value)} exceeds the cap of {MAX_RANK}")
    elements = 1
    for axis, dim in enumerate(value):
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 0:
            raise JobRefused(
                field, "shape", f"dimension {axis} is {dim!r}, expected a non-negative integer"
            )
        elements *= dim
        # Python ints do not overflow, but the bound is checked as we go so a shape of a thousand
        # huge dimensions costs nothing.
        if elements > MAX_ELEMENTS:
            raise JobRefused(field, "shape", f"{value!r} has more than {MAX_ELEMENTS} elements")
    return [int(dim) for dim in value]


def _timeouts(value: object) -> dict[str, float]:
    if value is None:
        return dict(DEFAULT_TIMEOUTS)
    if not isinstance(value, dict):
        raise JobRefused("timeouts", "type", f"expected an object, got {value!r}")
    timeouts = dict(DEFAULT_TIMEOUTS)
    for key in ("load", "run"):
        if key not in value:
            continue
        seconds = value[key]
        if (
            not isinstance(seconds, (int, float))
            or isinstance(seconds, bool)
            or not math.isfinite(seconds)
            or not 0 < seconds <= MAX_TIMEOUT_S
        ):
            raise JobRefused(
                "timeouts." + key,
                "type",
                f"expected seconds in (0, {MAX_TIMEOUT_S:g}], got {seconds!r}",
            )
        timeouts[key] = float(seconds)
    return timeouts


def read_job_json(job_dir: str) -> dict[str, Any]:
    path = os.path.join(job_dir, JOB_FILE)
    try:
        # Not through a link, and never blocking on a FIFO: the file is checked once opened.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise JobRefused(JOB_FILE, "missing", f"no {JOB_FILE} in {job_dir}") from None
    except OSError as exc:
        raise JobRefused(JOB_FILE, "path", f"cannot open it as a plain file ({exc})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise JobRefused(JOB_FILE, "path", f"{JOB_FILE} in {job_dir} is not a regular file")
        if info.st_size > MAX_JOB_JSON_BYTES:
            raise JobRefused(
                JOB_FILE, "json", f"{info.st_size} bytes exceeds the cap of {MAX_JOB_JSON_BYTES}"
            )
        raw = handle.read(MAX_JOB_JSON_BYTES + 1)
    if len(raw) > MAX_JOB_JSON_BYTES:
        raise JobRefused(JOB_FILE, "json", f"more than {MAX_JOB_JSON_BYTES} bytes")
    try:
        doc = loads_bounded(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise JobRefused(JOB_FILE, "json", f"not UTF-8 ({exc})") from None
    except ValueError as exc:
        raise JobRefused(JOB_FILE, "json", f"not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise JobRefused(JOB_FILE, "json", f"expected a JSON object, got {type(doc).__name__}")
    return doc


def validate_job(
    doc: dict[str, Any], job_dir: str, root: str | None, adapter_dirs: list[str]
) -> Job:
    """Check a parsed job.json against the protocol; raise JobRefused naming the field."""
    schema = parse_schema(doc.get("schema"))
    if schema is None or schema[0] != JOB_SCHEMA_NAME:
        raise JobRefused("schema", "schema", f"expected {JOB_SCHEMA!r}, got {doc.get('schema')!r}")
    if schema[1] != SCHEMA_MAJOR:
        raise JobRefused(
            "schema",
            "schema",
            f"{doc.get('schema')!r} has major version {schema[1]}; this agent speaks {JOB_SCHEMA}",
        )
    job_id = _require(doc, "", "job_id", str, "a string")
    if not job_id or len(job_id) > 200:
        raise JobRefused("job_id", "type", f"expected 1 to 200 characters, got {job_id!r}")

    adapter = _require(doc, "", "adapter", str, "an adapter name")
    if not ADAPTER_NAME_RE.match(adapter) or adapter == "base":
        raise JobRefused("adapter", "adapter", f"{adapter!r} is not an adapter name ([a-z0-9_]+)")
    if not any(os.path.isfile(os.path.join(d, adapter + ".py")) for d in adapter_dirs):
        known = ", ".join(available_adapters(adapter_dirs))
        raise JobRefused(
            "adapter",
            "adapter",
            f"{adapter!r} is not an adapter on this board (available: {known or 'none'})",
        )
    options = doc.get("adapter_options", {})
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise JobRefused("adapter_options", "type", f"expected an object, got {options!r}")

    model = _require(doc, "", "model", dict, "an object with path and sha256")
    sha = _require(model, "model.", "sha256", str, "a hex sha256").lower()
    if not SHA256_RE.match(sha):
        raise JobRefused("model.sha256", "type", f"{model['sha256']!r} is not 64 hex digits")
    model_path = _model_path(model.get("path"), job_dir, root)

    raw_inputs = _require(doc, "", "inputs", list, "a list of inputs")
    if len(raw_inputs) > MAX_INPUTS:
        raise JobRefused(
            "inputs", "shape", f"{len(raw_inputs)} inputs exceed the cap of {MAX_INPUTS}"
        )
    inputs = []
    names = set()
    for index, raw in enumerate(raw_inputs):
        spec = _input(index, raw, job_dir)
        if spec.name in names:
            raise JobRefused(f"inputs[{index}].name", "type", f"{spec.name!r} appears twice")
        names.add(spec.name)
        inputs.append(spec)
    total = sum(spec.nbytes for spec in inputs)
    if total > MAX_JOB_INPUT_BYTES:
        raise JobRefused(
            "inputs", "size", f"{total} bytes of inputs exceed the cap of {MAX_JOB_INPUT_BYTES}"
        )

    outputs = doc.get("outputs")
    if outputs is not None and (
        not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs)
    ):
        raise JobRefused("outputs", "type", f"expected null or a list of names, got {outputs!r}")
    return Job(
        job_id, adapter, options, model_path, sha, inputs, outputs, _timeouts(doc.get("timeouts"))
    )


def _model_path(value: object, job_dir: str, root: str | None) -> str:
    """The model lives in the job directory or, for artifacts deployed once per session, in the
    cache root; a relative path is looked up in that order."""
    field = "model.path"
    where = "the job directory" if root is None else "the job directory and the model cache"
    rel = _check_relative(field, value, where)
    candidates = [job_dir] if root is None else [job_dir, root]
    for base in candidates:
        full = os.path.realpath(os.path.join(base, rel))
        if os.path.lexists(os.path.join(base, rel)):
            if not any(_within(full, b) for b in candidates):
                raise JobRefused(
                    field,
                    "path",
                    f"{rel!r} leaves {where} through a symlink (it resolves to {full})",
                )
            _regular_file(field, rel, full, where)
            return full
    raise JobRefused(field, "missing", f"{rel!r} does not exist in {where}")


def _input(index: int, raw: object, job_dir: str) -> InputSpec:
    field = f"inputs[{index}]."
    if not isinstance(raw, dict):
        raise JobRefused(f"inputs[{index}]", "type", f"expected an object, got {raw!r}")
    name = _require(raw, field, "name", str, "a string")
    rel = _require(raw, field, "file", str, "a relative file path")
    full = confine(field + "file", rel, job_dir)
    _regular_file(field + "file", rel, full, "the job directory")
    layout = raw.get("layout", "")
    if not isinstance(layout, str):
        raise JobRefused(field + "layout", "type", f"expected a string, got {layout!r}")
    shape = _shape(field + "shape", raw.get("shape"))
    dtype = _require(raw, field, "dtype", str, "a dtype name")
    if dtype not in DTYPES:
        raise JobRefused(field + "dtype", "dtype", f"{dtype!r} is not one of {', '.join(DTYPES)}")
    pass_through = raw.get("pass_through", False)
    if not isinstance(pass_through, bool):
        raise JobRefused(
            field + "pass_through", "type", f"expected true or false, got {pass_through!r}"
        )
    size = os.path.getsize(full)
    want = math.prod(shape) * np.dtype(dtype).itemsize
    if want > MAX_INPUT_BYTES:
        raise JobRefused(
            field + "shape", "shape", f"{shape} {dtype} needs {want} bytes (cap {MAX_INPUT_BYTES})"
        )
    if size > MAX_INPUT_BYTES:
        raise JobRefused(
            field + "file", "size", f"{rel!r} holds {size} bytes (cap {MAX_INPUT_BYTES})"
        )
    if not pass_through and size != want:
        raise JobRefused(
            field + "file",
            "size",
            f"{rel!r} holds {size} bytes; shape {shape} {dtype} needs {want}",
        )
    return InputSpec(name, full, layout, shape, dtype, pass_through, size)


def available_adapters(adapter_dirs: list[str]) -> list[str]:
    names = set()
    for folder in adapter_dirs:
        if os.path.isdir(folder):
            for entry in os.listdir(folder):
                stem, ext = os.path.splitext(entry)
                if ext == ".py" and stem != "base" and ADAPTER_NAME_RE.match(stem):
                    names.add(stem)
    return sorted(names)


# --- the runtime thread and its watchdog ---------------------------------------------------------


class CallTimedOut(Exception):
    def __init__(self, stage: str, seconds: float) -> None:
        super().__init__(f"{stage} did not return within {seconds:g} s")
        self.stage = stage
        self.seconds = seconds


class _Task(Generic[T]):
    def __init__(self, fn: Callable[[], T]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.value: T | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self.fn()
        except BaseException as exc:  # handed to the waiting thread, which decides
            self.error = exc
        finally:
            self.done.set()


class RuntimeThread:
    """Runs every adapter call on one long-lived daemon thread.

    Vendor runtimes may tie a context to the thread that created it, so all calls go through the
    same thread; the caller waits with a timeout and, on expiry, marks the thread stuck. A stuck
    thread is never reused: the agent reports and exits.
    """

    def __init__(self) -> None:
        self.stuck = False
        self._tasks: queue.Queue[_Task[Any] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="npu-runtime", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            task.run()

    def call(self, stage: str, fn: Callable[[], T], timeout: float) -> T:
        if self.stuck:
            raise CallTimedOut(stage, 0.0)
        task = _Task(fn)
        self._tasks.put(task)
        if not task.done.wait(timeout):
            self.stuck = True
            raise CallTimedOut(stage, timeout)
        if task.error is not None:
            raise task.error
        return task.value  # type: ignore[return-value]  # set whenever error is None

    def stop(self) -> None:
        if not self.stuck:
            self._tasks.put(None)


# --- adapters ------------------------------------------------------------------------------------


def adapter_dirs_from(cli_dirs: list[str]) -> list[str]:
    """Search order for adapter modules: --adapters, then $NPU_HIL_AGENT_ADAPTERS, then the
    ``adapters/`` folder beside this file."""
    env = [d for d in os.environ.get(ADAPTERS_ENV, "").split(os.pathsep) if d]
    return [os.path.realpath(d) for d in [*cli_dirs, *env]] + [os.path.join(AGENT_DIR, "adapters")]


def _adapter_package(adapter_dirs: list[str]) -> ModuleType:
    """Register the ``adapters`` package with every search folder on its ``__path__``.

    Built by hand rather than found on sys.path so that a test folder holding only ``echo.py``
    still sees ``adapters.base`` from beside the agent, whether or not either folder has an
    ``__init__.py``.
    """
    package = sys.modules.get("adapters")
    if package is None:
        spec = importlib.machinery.ModuleSpec("adapters", None, is_package=True)
        spec.submodule_search_locations = list(adapter_dirs)
        package = importlib.util.module_from_spec(spec)
        sys.modules["adapters"] = package
    search = package.__spec__.submodule_search_locations if package.__spec__ else None
    if search is not None:
        for folder in reversed(adapter_dirs):
            if folder not in search:
                search.insert(0, folder)
    return package


def load_adapter_base(adapter_dirs: list[str]) -> ModuleType:
    _adapter_package(adapter_dirs)
    if AGENT_DIR not in sys.path:
        sys.path.insert(0, AGENT_DIR)
    return importlib.import_module("adapters.base")


def _describe_exception(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _traceback_tail(exc: BaseException, limit: int = 4000) -> str:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return text[-limit:]


class StageFailed(Exception):
    """An adapter stage failed with a typed record for result.json."""

    def __init__(self, record: dict[str, Any]) -> None:
        super().__init__(record["message"])
        self.record = record


# --- the agent -----------------------------------------------------------------------------------


class Agent:
    """Runs jobs. One instance per process; in session mode it keeps adapters and models."""

    def __init__(
        self, adapter_dirs: list[str], root: str | None, model_cache_size: int = 4
    ) -> None:
        self.adapter_dirs = adapter_dirs
        self.root = os.path.realpath(root) if root else None
        self.model_cache_size = max(1, model_cache_size)
        self.base = load_adapter_base(adapter_dirs)
        self.runtime = RuntimeThread()
        self.adapters: dict[tuple[str, str], Adapter] = {}
        self.versions_cache: dict[tuple[str, str], dict[str, Any]] = {}
        self.models: OrderedDict[tuple[tuple[str, str], str], Any] = OrderedDict()
        self.jobs_run = 0
        # One request at a time, whichever connection it came on: the caches and the runtime
        # thread are shared, and a vendor runtime is not re-entrant.
        self.lock = threading.Lock()

    # adapters and models

    def _adapter_key(self, name: str, options: dict[str, Any]) -> tuple[str, str]:
        return name, json.dumps(options, sort_keys=True, default=_jsonable)

    def adapter(self, name: str, options: dict[str, Any], timeout: float) -> Adapter:
        key = self._adapter_key(name, options)
        if key in self.adapters:
            return self.adapters[key]

        def create() -> Adapter:
            try:
                module = importlib.import_module("adapters." + name)
            except ImportError as exc:
                # The vendor package or library is not on this board.
                raise StageFailed(
                    _error(
                        "UnsupportedError",
                        "init",
                        f"adapter {name!r} cannot be imported here: {_describe_exception(exc)}",
                    )
                ) from None
            cls = getattr(module, "ADAPTER", None)
            if not isinstance(cls, type) or not issubclass(cls, self.base.Adapter):
                raise StageFailed(
                    _error(
                        "UnsupportedError", "init", f"adapters/{name}.py defines no ADAPTER class"
                    )
                )
            instance: Adapter = cls(dict(options))
            return instance

        self.adapters[key] = self._call("init", name, create, timeout)
        return self.adapters[key]

    def versions(self, name: str, options: dict[str, Any], timeout: float) -> dict[str, Any]:
        key = self._adapter_key(name, options)
        if key not in self.versions_cache:
            adapter = self.adapter(name, options, timeout)
            try:
                reported = self._call("init", name, adapter.versions, timeout)
                found: dict[str, Any] = {str(k): str(v) for k, v in reported.items()}
            except StageFailed as failed:
                if self.runtime.stuck:
                    raise
                # Versions are evidence, not a precondition: a runtime that cannot say still runs.
                found = {"versions_error": failed.record["message"]}
            found.update(
                {
                    "agent": AGENT_VERSION,
                    "python": platform.python_version(),
                    "numpy": np.__version__,
                    "platform": platform.platform(),
                    "machine": platform.machine(),
                }
            )
            self.versions_cache[key] = found
        return dict(self.versions_cache[key])

    def model(self, job: Job, adapter: Adapter, timeout: float) -> tuple[Any, bool]:
        """The loaded model for the job's artifact, from the cache when this adapter instance
        already loaded the same bytes. A cached model needs no hashing: it is the artifact the
        job names by sha256, whatever the file holds now."""
        key = (self._adapter_key(job.adapter, job.options), job.model_sha256)
        if key in self.models:
            self.models.move_to_end(key)
            return self.models[key], True
        actual = sha256_file(job.model_path)
        if actual != job.model_sha256:
            raise JobRefused(
                "model.sha256",
                "checksum",
                f"the model file hashes to {actual}, the job says {job.model_sha256}",
            )
        handle = self._call("load", job.adapter, lambda: adapter.load(job.model_path), timeout)
        self.models[key] = handle
        while len(self.models) > self.model_cache_size:
            (old_adapter_key, old_sha), old = self.models.popitem(last=False)
            self._release(old_adapter_key, old_sha, old, timeout)
        return handle, False

    def _release(self, adapter_key: tuple[str, str], sha: str, handle: Any, timeout: float) -> None:
        owner = self.adapters.get(adapter_key)
        if owner is None:
            return
        try:
            self._call("release", adapter_key[0], lambda: owner.release(handle), timeout)
        except StageFailed as failed:
            log.warning("releasing model %s failed: %s", sha[:12], failed.record["message"])

    def _call(self, stage: str, adapter: str, fn: Callable[[], T], timeout: float) -> T:
        """One adapter call under the watchdog, with every failure turned into a typed record."""
        try:
            return self.runtime.call(stage, fn, timeout)
        except CallTimedOut as exc:
            raise StageFailed(
                _error(
                    "TimeoutError",
                    stage,
                    f"adapter {adapter!r} did not return from {stage} within {exc.seconds:g} s; "
                    "a hung runtime call cannot be interrupted, so the agent exits after reporting",
                )
            ) from None
        except StageFailed:
            raise
        except self.base.AdapterError as exc:
            raise StageFailed(exc.record()) from None
        except BaseException as exc:
            log.error("adapter %s raised during %s:\n%s", adapter, stage, _traceback_tail(exc))
            raise StageFailed(
                _error(
                    "DeviceError",
                    stage,
                    f"adapter {adapter!r} raised {_describe_exception(exc)} during {stage}",
                    detail=_traceback_tail(exc),
                )
            ) from None

    def shutdown(self, timeout: float = 30.0) -> None:
        """Release every cached model (unless the runtime thread is stuck in a vendor call)."""
        while self.models and not self.runtime.stuck:
            (adapter_key, sha), handle = self.models.popitem(last=False)
            self._release(adapter_key, sha, handle, timeout)
        self.runtime.stop()

    # jobs

    def run_job(self, job_dir: str) -> tuple[dict[str, Any], int]:
        """Run one job directory; returns the result document (also written as result.json) and
        the exit status that one-shot mode would use."""
        started = time.perf_counter()
        job_dir = os.path.realpath(job_dir)
        result: dict[str, Any] = {
            "schema": RESULT_SCHEMA,
            "job_id": None,
            "ok": False,
            "adapter": None,
            "versions": {},
            "timings": {
                "load_s": 0.0,
                "run_s": 0.0,
                "copy_s": 0.0,
                "total_s": 0.0,
                "model_cached": False,
            },
            "inputs": [],
            "outputs": [],
            "errors": [],
        }
        status = EXIT_OK
        try:
            status = self._run(job_dir, result)
        except JobRefused as refused:
            result["errors"].append(refused.record())
            status = EXIT_REFUSED
        except StageFailed as failed:
            result["errors"].append(failed.record)
            status = EXIT_TIMEOUT if failed.record["type"] == "TimeoutError" else EXIT_OK
        except OSError as exc:  # the board's own trouble (a full disk): said by its name
            log.error("job %s: %s", job_dir, exc)
            result["errors"].append(os_error_record(exc, "agent"))
            status = EXIT_FAILED
        except Exception as exc:  # an agent bug: still report it as a typed record
            log.error("agent error:\n%s", _traceback_tail(exc))
            result["errors"].append(
                _error("AgentError", "agent", _describe_exception(exc), detail=_traceback_tail(exc))
            )
            status = EXIT_FAILED
        if self.runtime.stuck:
            status = EXIT_TIMEOUT
        result["ok"] = not result["errors"]
        result["timings"]["total_s"] = time.perf_counter() - started
        self.jobs_run += 1
        problem = write_result(job_dir, result)
        if problem is not None:
            # No result.json on the board: the session's answer still carries the result,
            # and now why the file is missing.
            result["errors"].append(os_error_record(problem, "result"))
            result["ok"] = False
            status = status or EXIT_FAILED
        return result, status

    def _run(self, job_dir: str, result: dict[str, Any]) -> int:
        if not os.path.isdir(job_dir):
            raise JobRefused("job_dir", "missing", f"{job_dir} is not a directory")
        doc = read_job_json(job_dir)
        if isinstance(doc.get("job_id"), str):
            result["job_id"] = doc["job_id"]
        if isinstance(doc.get("adapter"), str):
            result["adapter"] = doc["adapter"]
        job = validate_job(doc, job_dir, self.root, self.adapter_dirs)
        timings = result["timings"]
        load_timeout, run_timeout = job.timeouts["load"], job.timeouts["run"]

        adapter = self.adapter(job.adapter, job.options, load_timeout)
        result["versions"] = self.versions(job.adapter, job.options, load_timeout)

        t0 = time.perf_counter()
        model, cached = self.model(job, adapter, load_timeout)
        timings["load_s"] = 0.0 if cached else time.perf_counter() - t0
        timings["model_cached"] = cached
        if not cached:
            # Some runtimes can say their versions only once a model is loaded (RKNN's API and
            # driver versions need a context): ask again after every fresh load.
            self.versions_cache.pop(self._adapter_key(job.adapter, job.options), None)
            result["versions"] = self.versions(job.adapter, job.options, load_timeout)

        tensors = [self._input_tensor(spec) for spec in job.inputs]
        t0 = time.perf_counter()
        run = self._call(
            "run", job.adapter, lambda: adapter.run(model, tensors, job.outputs), run_timeout
        )
        run_wall = time.perf_counter() - t0
        if not isinstance(run, self.base.RunOutput):
            raise StageFailed(
                _error(
                    "DeviceError",
                    "run",
                    f"adapter {job.adapter!r} returned {run!r}, not a RunOutput",
                )
            )
        reported = {str(k): float(v) for k, v in (run.timings or {}).items()}
        # The adapter's own run time excludes its copies when it can tell them apart.
        timings["run_s"] = reported.get("run_s", run_wall)
        t0 = time.perf_counter()
        result["inputs"] = [
            write_tensor(job_dir, f"in_{i}.bin", t) for i, t in enumerate(run.inputs)
        ]
        result["outputs"] = [
            write_tensor(job_dir, f"out_{i}.bin", t) for i, t in enumerate(run.outputs)
        ]
        timings["copy_s"] = reported.get("copy_s", 0.0) + (time.perf_counter() - t0)
        if reported:
            timings["adapter"] = reported
        return EXIT_OK

    def _input_tensor(self, spec: InputSpec) -> InputTensor:
        data = np.fromfile(spec.path, dtype=np.uint8, count=spec.nbytes)
        tensor: InputTensor = self.base.InputTensor(
            name=spec.name,
            data=data,
            layout=spec.layout,
            shape=list(spec.shape),
            dtype=spec.dtype,
            pass_through=spec.pass_through,
        )
        return tensor


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


def write_tensor(job_dir: str, filename: str, tensor: TensorOut) -> dict[str, Any]:
    """Write a device buffer as a blob and describe it; the bytes are the buffer as the runtime
    holds it, whatever its dtype."""
    flat = np.ascontiguousarray(tensor.data).reshape(-1).view(np.uint8)
    with create_new(os.path.join(job_dir, filename), "wb") as handle:
        handle.write(flat.data)
    return {
        "name": str(tensor.name),
        "file": filename,
        "sha256": hashlib.sha256(flat.data).hexdigest(),
        "nbytes": int(flat.size),
        "layout": str(tensor.layout),
        "dtype": str(tensor.dtype),
        "shape": [int(d) for d in tensor.shape],
        "attributes": json.loads(json.dumps(tensor.attributes or {}, default=_jsonable)),
    }


def write_result(job_dir: str, result: dict[str, Any]) -> OSError | None:
    """Write result.json atomically (the host never sees half a file); the OSError when the
    directory is not writable, full or missing, else None."""
    path = os.path.join(job_dir, RESULT_FILE)
    tmp = path + ".tmp"
    try:
        with create_new(tmp, "w") as handle:
            json.dump(result, handle, indent=1, default=_jsonable)
        # A rename replaces the name itself: a symlink planted as result.json is not followed.
        os.replace(tmp, path)
    except OSError as exc:
        log.error("cannot write %s: %s", path, exc)
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # half a file on a full disk holds space the next job needs
        return exc
    return None


# --- session mode --------------------------------------------------------------------------------


class ReadTimeout(Exception):
    """A client sent nothing (or half a frame) for longer than the connection's read timeout."""


class BadFrame(ValueError):
    """A frame that arrived whole but holds no request (not JSON, nested too deep, not an
    object): the stream is still in step, so it is answered and the session goes on."""


class FrameStream:
    """Frames over two file descriptors, with nothing buffered in Python."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd

    def _recv(self, n: int) -> bytes:
        return os.read(self.read_fd, n)

    def _send(self, data: memoryview) -> int:
        return os.write(self.write_fd, data)

    def _read_exactly(self, n: int) -> bytes | None:
        chunks = []
        remaining = n
        while remaining:
            chunk = self._recv(min(remaining, 1 << 20))
            if not chunk:
                if remaining == n:
                    return None
                raise EOFError("stream ended inside a frame")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def read(self) -> dict[str, Any] | None:
        """The next request, or None at end of stream."""
        header = self._read_exactly(FRAME_HEADER.size)
        if header is None:
            return None
        length = frame_length(header)
        if length > MAX_REQUEST_BYTES:
            # Not read: a client cannot make the agent buffer a frame that large.
            raise ValueError(
                f"a request frame of {length} bytes exceeds the cap of {MAX_REQUEST_BYTES}"
            )
        payload = self._read_exactly(length)
        if payload is None:
            raise EOFError("stream ended inside a frame")
        try:
            return decode_frame(payload)
        except ValueError as exc:  # UnicodeDecodeError and JSON errors included
            raise BadFrame(str(exc)) from None

    def write(self, message: dict[str, Any]) -> None:
        data = memoryview(encode_frame(message))
        while data:
            written = self._send(data)
            data = data[written:]


class SocketFrameStream(FrameStream):
    """Frames over a connected socket whose every wait is bounded by ``timeout`` seconds: a
    client that sends nothing, or stops reading its answers, loses its connection (a silent
    read is a ReadTimeout, a stuck write a socket.timeout, which is an OSError)."""

    def __init__(self, connection: socket.socket, timeout: float) -> None:
        fd = connection.fileno()
        super().__init__(fd, fd)
        self.connection = connection
        self.timeout = timeout
        connection.settimeout(timeout)

    def _recv(self, n: int) -> bytes:
        try:
            return self.connection.recv(n)
        except socket.timeout:  # noqa: UP041 (not yet TimeoutError on Python 3.8)
            raise ReadTimeout(f"no complete request within {self.timeout:g} s") from None

    def _send(self, data: memoryview) -> int:
        return self.connection.send(data)


def _private_stdio() -> FrameStream:
    """Take fds 0 and 1 for the frame stream and point the originals at /dev/null and stderr, so
    vendor libraries that read stdin or printf to stdout cannot touch the protocol."""
    frames_in = os.dup(0)
    frames_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return FrameStream(frames_in, frames_out)


def own_bundle() -> dict[str, str]:
    """sha256 of this agent and the adapters beside it, as the board has them: the host compares
    them with what it deployed, so a cached copy damaged on the board is found and replaced."""
    here = os.path.dirname(os.path.abspath(__file__))
    names = ["agent.py"]
    if os.path.isfile(os.path.join(here, "relay.py")):
        names.append("relay.py")
    folder = os.path.join(here, "adapters")
    if os.path.isdir(folder):
        names += ["adapters/" + n for n in sorted(os.listdir(folder)) if n.endswith(".py")]
    return {name: sha256_file(os.path.join(here, name)) for name in names}


def serve(agent: Agent, stream: FrameStream, shutdown_on_eof: bool = True) -> int | None:
    """The session loop: one response frame per request. Returns the exit status, or None when
    the stream ended and the agent stays up for the next one (``shutdown_on_eof=False``: a
    connection in listen mode)."""
    try:
        stream.write(
            {
                "op": "hello",
                "protocol": SESSION_PROTOCOL,
                "job_schema": JOB_SCHEMA,
                "result_schema": RESULT_SCHEMA,
                "agent": AGENT_VERSION,
                "pid": os.getpid(),
                "python": platform.python_version(),
                "adapters": available_adapters(agent.adapter_dirs),
                "bundle": own_bundle(),
            }
        )
        return _serve_requests(agent, stream, shutdown_on_eof)
    except OSError as exc:
        # The host went away (broken pipe): nobody is left to answer.
        log.error("session stream lost: %s", exc)
        if not shutdown_on_eof:
            return None
        if not agent.runtime.stuck:
            agent.shutdown()
        return EXIT_FAILED


def _serve_requests(agent: Agent, stream: FrameStream, shutdown_on_eof: bool) -> int | None:
    while True:
        try:
            request = stream.read()
        except BadFrame as exc:
            # A whole frame that is not a request: the stream is still in step.
            log.error("bad request: %s", exc)
            stream.write({"op": "error", "error": _error("ProtocolError", "session", str(exc))})
            continue
        except (ValueError, EOFError, ReadTimeout) as exc:
            # A desynchronised, cut or silent stream cannot be recovered: say so once and leave.
            log.error("bad frame: %s", exc)
            stream.write({"op": "error", "error": _error("ProtocolError", "session", str(exc))})
            if not shutdown_on_eof:
                return None  # only this connection is lost; the agent itself is fine
            agent.shutdown()
            return EXIT_FAILED
        if request is None:
            if not shutdown_on_eof:
                return None
            agent.shutdown()
            return EXIT_OK
        with agent.lock:
            status = _answer(agent, stream, request)
        if status is not None:
            return status


def _answer(agent: Agent, stream: FrameStream, request: dict[str, Any]) -> int | None:
    """Answer one request; the exit status when it ends the agent (a shutdown), else None."""
    op = request.get("op")
    if op == "job":
        try:
            job_dir = session_job_dir(request.get("dir"))
        except JobRefused as refused:
            stream.write({"op": "job", "error": refused.record()})
            return None
        result, status = agent.run_job(job_dir)
        restart = agent.runtime.stuck
        stream.write({"op": "job", "result": result, "status": status, "restart": restart})
        if restart:
            # The runtime thread is stuck in a vendor call that cannot be interrupted.
            log.error("a runtime call timed out; ending the session so the host restarts it")
            _abandon(EXIT_TIMEOUT)
    elif op == "ping":
        stream.write(
            {
                "op": "ping",
                "pid": os.getpid(),
                "jobs": agent.jobs_run,
                "models": [sha for (_, sha) in agent.models],
            }
        )
    elif op == "versions":
        stream.write(_versions_response(agent, request))
        if agent.runtime.stuck:
            _abandon(EXIT_TIMEOUT)
    elif op == "discard":
        stream.write(_discard_job(request.get("dir")))
    elif op == "shutdown":
        agent.shutdown()
        stream.write({"op": "shutdown"})
        return EXIT_OK
    else:
        stream.write({"op": op, "error": _error("ProtocolError", "session", f"unknown op {op!r}")})
    return None


def session_job_dir(value: Any) -> str:
    """A session job's ``dir``: exactly ``jobs/<name>`` in the workdir, the folders real and this
    user's own, so a request cannot make the agent write its result anywhere else (``"/"``)."""
    if (
        not isinstance(value, str)
        or "\x00" in value
        or len(value.split("/")) != 2
        or value.split("/")[0] != JOBS_FOLDER
        or value.split("/")[1] in ("", ".", "..")
    ):
        raise JobRefused("dir", "path", f"{value!r} is not a job folder under {JOBS_FOLDER}/")
    for folder in (JOBS_FOLDER, value):
        try:
            check_folder(folder)
        except FileNotFoundError:
            raise JobRefused("dir", "missing", f"{value!r} is not a directory") from None
        except UnsafeFolder as exc:
            raise JobRefused("dir", "unsafe", str(exc)) from None
    return value


def _discard_job(job_dir: Any) -> dict[str, Any]:
    """Remove a finished job's folder for the host. The session already runs on the board, so
    this costs the host one frame instead of a new remote process per job (over SSH a new
    process is a new channel and a login shell). Only a folder directly under ``jobs/`` is
    removed, never through a symlink: a confused or hostile request cannot reach anything else."""
    if not isinstance(job_dir, str):
        return {"op": "discard", "error": _error("JobError", "discard", "dir: expected a path")}
    parts = job_dir.split("/")
    root = os.path.realpath(JOBS_FOLDER)
    if (
        len(parts) != 2
        or parts[0] != JOBS_FOLDER
        or parts[1] in ("", ".", "..")
        or "\x00" in job_dir
        or os.path.islink(JOBS_FOLDER)
        or os.path.islink(job_dir)
        or os.path.dirname(os.path.realpath(job_dir)) != root
    ):
        message = f"dir: {job_dir!r} is not a job folder under {JOBS_FOLDER}/"
        return {"op": "discard", "error": _error("JobError", "discard", message)}
    try:
        check_folder(JOBS_FOLDER)
    except (OSError, UnsafeFolder) as exc:
        return {"op": "discard", "error": _error("JobError", "discard", f"dir: {exc}")}
    shutil.rmtree(job_dir, ignore_errors=True)
    return {"op": "discard", "removed": not os.path.exists(job_dir)}


def _versions_response(agent: Agent, request: dict[str, Any]) -> dict[str, Any]:
    name = request.get("adapter")
    options = request.get("options") or {}
    if not isinstance(name, str) or not ADAPTER_NAME_RE.match(name) or name == "base":
        return {
            "op": "versions",
            "error": _error("JobError", "validate", f"adapter: {name!r} is not an adapter name"),
        }
    if name not in available_adapters(agent.adapter_dirs):
        return {
            "op": "versions",
            "error": _error(
                "JobError", "validate", f"adapter: {name!r} is not an adapter on this board"
            ),
        }
    if not isinstance(options, dict):
        return {
            "op": "versions",
            "error": _error("JobError", "validate", "options: expected an object"),
        }
    try:
        return {
            "op": "versions",
            "versions": agent.versions(name, options, DEFAULT_TIMEOUTS["load"]),
        }
    except StageFailed as failed:
        return {"op": "versions", "error": failed.record, "restart": agent.runtime.stuck}


# --- listen mode ---------------------------------------------------------------------------------

DEFAULT_IDLE_TIMEOUT_S = 1800.0
DEFAULT_READ_TIMEOUT_S = 120.0
DEFAULT_MAX_CONNECTIONS = 8

# The socket of a listening agent, removed on the way out: also by _abandon, which skips the
# interpreter's own clean-up.
_listening: list[str] = []


def _abandon(status: int) -> NoReturn:
    """Leave at once: the runtime thread is stuck in a vendor call, which interpreter shutdown
    would wait for. A listening agent removes its socket first, so the next connection fails at
    once and the host starts a new agent."""
    for path in _listening:
        _remove_socket(path)
    sys.stderr.flush()
    os._exit(status)


def _remove_socket(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _answers(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


def bind_socket(path: str) -> socket.socket:
    """A listening Unix stream socket at ``path`` that only this user can connect to. A socket
    file left by an agent that died is removed first; a live one, or a path that is not a socket,
    is refused (OSError)."""
    try:
        mode: int | None = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None:
        if not stat.S_ISSOCK(mode):
            raise OSError(f"{path} exists and is not a socket")
        if _answers(path):
            raise OSError(f"another agent listens at {path}")
        _remove_socket(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # A umask rather than a chmod after bind: there is no moment at which others may connect.
    previous = os.umask(0o177)
    try:
        server.bind(path)
        server.listen(4)
    except OSError:
        server.close()
        raise
    finally:
        os.umask(previous)
    return server


def listen(
    agent: Agent,
    path: str,
    idle_timeout: float,
    read_timeout: float = DEFAULT_READ_TIMEOUT_S,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> int:
    """Serve connections at ``path`` until a shutdown request, a fatal error or ``idle_timeout``
    seconds without a connection; the socket is removed on the way out. Up to
    ``max_connections`` clients are connected at once, each on a thread of its own, and their
    requests take turns (``agent.lock``): a client that says nothing blocks nobody and is
    dropped after ``read_timeout`` seconds; one more than the bound is told so and closed."""
    try:
        server = bind_socket(path)
    except OSError as exc:
        log.error("cannot listen at %s: %s", path, exc)
        agent.shutdown()
        return EXIT_FAILED
    _listening.append(path)
    log.info("listening at %s", path)
    try:
        return _accept_loop(agent, server, idle_timeout, read_timeout, max_connections)
    finally:
        server.close()
        _remove_socket(path)
        _listening.remove(path)


class _Connections:
    """What the accept loop and the connection threads share."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.last_seen = time.monotonic()
        self.status: int | None = None
        self.done = threading.Event()


# How often the accept loop looks up from accept(): for a shutdown asked on a connection thread.
_ACCEPT_POLL_S = 0.2


def _accept_loop(
    agent: Agent,
    server: socket.socket,
    idle_timeout: float,
    read_timeout: float,
    max_connections: int,
) -> int:
    shared = _Connections()
    server.settimeout(min(idle_timeout, _ACCEPT_POLL_S))
    while not shared.done.is_set():
        try:
            connection, _ = server.accept()
        # Not TimeoutError: on Python 3.8 socket.timeout is not yet an alias of it.
        except socket.timeout:  # noqa: UP041
            with shared.lock:
                idle = shared.active == 0 and time.monotonic() - shared.last_seen >= idle_timeout
            if idle and not shared.done.is_set():
                log.info("no connection for %g s: exiting", idle_timeout)
                agent.shutdown()
                return EXIT_OK
            continue
        with shared.lock:
            busy = shared.active >= max_connections
            if not busy:
                shared.active += 1
        if busy:
            _refuse_connection(connection, max_connections)
            continue
        worker = threading.Thread(
            target=_serve_connection,
            args=(agent, connection, shared, read_timeout),
            name="npu-hil-connection",
            daemon=True,
        )
        worker.start()
    return EXIT_OK if shared.status is None else shared.status


def _serve_connection(
    agent: Agent, connection: socket.socket, shared: _Connections, read_timeout: float
) -> None:
    status: int | None = None
    try:
        with connection:
            status = serve(
                agent, SocketFrameStream(connection, read_timeout), shutdown_on_eof=False
            )
            _drain(connection)
    except Exception as exc:  # one connection's trouble must not end the agent
        log.error("connection failed: %s", _traceback_tail(exc))
    finally:
        with shared.lock:
            shared.active -= 1
            shared.last_seen = time.monotonic()
            if status is not None:
                shared.status = status
                shared.done.set()


def _refuse_connection(connection: socket.socket, max_connections: int) -> None:
    message = f"the agent already serves {max_connections} connections; try again"
    log.warning("connection refused: %s", message)
    with connection, contextlib.suppress(OSError):
        connection.settimeout(5.0)
        connection.sendall(
            encode_frame({"op": "error", "error": _error("ProtocolError", "session", message)})
        )


def _drain(connection: socket.socket) -> None:
    """Read what the peer sent and nobody will read: closing a Unix socket with unread input
    resets the connection, and the peer could lose the answers still queued for it (the error
    that says why a garbled connection ends, for one)."""
    connection.setblocking(False)
    with contextlib.suppress(OSError):
        while connection.recv(1 << 16):
            pass


# --- command line --------------------------------------------------------------------------------


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="agent.py", description="npu-hil board agent")
    parser.add_argument("job_dir", nargs="?", help="run this one job directory and exit")
    parser.add_argument(
        "--session", action="store_true", help="serve framed jobs over stdin/stdout"
    )
    parser.add_argument(
        "--listen",
        metavar="SOCKET",
        help="serve framed jobs on a Unix socket at this path, one connection at a time",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT_S,
        metavar="S",
        help="with --listen: exit after this many seconds without a connection",
    )
    parser.add_argument(
        "--read-timeout",
        type=float,
        default=DEFAULT_READ_TIMEOUT_S,
        metavar="S",
        help="with --listen: drop a connection that sends no complete request for S seconds",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=DEFAULT_MAX_CONNECTIONS,
        metavar="N",
        help="with --listen: clients served at once (their requests take turns)",
    )
    parser.add_argument("--root", help="model cache directory (model.path may be relative to it)")
    parser.add_argument(
        "--adapters",
        action="append",
        default=[],
        metavar="DIR",
        help=f"extra adapter folder, searched first (repeatable; also ${ADAPTERS_ENV})",
    )
    parser.add_argument("--model-cache", type=int, default=4, help="loaded models kept per session")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages to stderr")
    args = parser.parse_args(argv)
    if [bool(args.job_dir), bool(args.session), args.listen is not None].count(True) != 1:
        parser.error("give one of JOB_DIR, --session or --listen SOCKET")
    if not args.idle_timeout > 0:
        parser.error("--idle-timeout must be a positive number of seconds")
    if not args.read_timeout > 0:
        parser.error("--read-timeout must be a positive number of seconds")
    if args.max_connections < 1:
        parser.error("--max-connections must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="npu-hil-agent[%(process)d] %(levelname)s %(message)s",
    )
    # A segfault in a vendor library leaves a Python traceback in the board's log.
    faulthandler.enable(file=sys.stderr)
    stream = _private_stdio() if args.session else None
    if args.listen is not None:
        # Started in the background with stdout on /dev/null: what a vendor library prints
        # belongs in the log with the rest.
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    try:
        if args.job_dir is None:
            # A resident agent serves from its working directory, the board workdir.
            check_workdir(os.getcwd())
    except (OSError, UnsafeFolder) as exc:
        log.error("cannot start: %s", exc)
        return EXIT_FAILED
    if args.job_dir is not None:
        try:
            check_folder(args.job_dir)
        except FileNotFoundError:
            pass  # run_job reports it as a refusal, in the usual way
        except (OSError, UnsafeFolder) as exc:
            # Nothing is written into a folder that is not ours, not even the refusal.
            log.error("refused: %s", exc)
            return EXIT_REFUSED
    try:
        agent = Agent(adapter_dirs_from(args.adapters), args.root, args.model_cache)
    except Exception as exc:
        log.error("cannot start: %s", _traceback_tail(exc))
        return EXIT_FAILED
    if args.listen is not None:
        return listen(
            agent, args.listen, args.idle_timeout, args.read_timeout, args.max_connections
        )
    if stream is not None:
        status = serve(agent, stream)
        return EXIT_OK if status is None else status
    result, status = agent.run_job(args.job_dir)
    for record in result["errors"]:
        log.info("%s [%s] %s", record["type"], record["stage"], record["message"])
    if agent.runtime.stuck:
        # The hung call is on a daemon thread; leave without waiting for interpreter shutdown.
        sys.stderr.flush()
        os._exit(status)
    agent.shutdown()
    return status


if __name__ == "__main__":
    sys.exit(main())
