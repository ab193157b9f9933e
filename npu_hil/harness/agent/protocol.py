"""Host side of the board-agent job protocol: a job as one frame (its inputs checked against
their spec before anything is sent), the frames read back from the agent's stream (each buffer
hashed while it arrives; :mod:`npu_hil.harness.board.frames`: the sender's digests travel in the
frame's trailer), and a result read and verified (schema major version, every buffer's size and
sha256, plain unique buffer names, the canary, board state and board log) before a byte of it is
trusted. Schema strings and bounds come from the board package, so the two cannot drift."""

from __future__ import annotations

import dataclasses
import errno as _errno
import hashlib
import io
import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Protocol, cast

import numpy as np

from npu_hil.harness.board.documents import InputJson, JobJson, LogJson
from npu_hil.harness.board.job import (
    DEFAULT_RUNS,
    DEFAULT_TIMEOUTS,
    DEFAULT_WARMUP,
    DTYPES,
    MAX_ELEMENTS,
    MAX_RANK,
    MAX_RUNS,
)
from npu_hil.harness.board.job import InputSpec as InputSpec
from npu_hil.harness.board.wire import (
    BULK_CHUNK,
    BULK_PREFIX,
    DIGEST_BYTES,
    FRAME_HEADER,
    JOB_FILE,
    JOB_SCHEMA,
    RESULT_FILE,
    RESULT_SCHEMA,
    RESULT_SCHEMA_NAME,
    SCHEMA_MAJOR,
    bulk_sizes,
    decode_frame,
    encode_bulk_frame,
    frame_length,
    is_bulk,
    parse_schema,
)
from npu_hil.harness.errors import (
    DeviceError,
    LayoutError,
    NpuHilError,
    ProtocolError,
    TransportError,
)

# Reasons the agent gives for refusing a job whose files do not match what the host announced:
# the bytes changed on the way, which is infrastructure, not a protocol disagreement.
_INTEGRITY_REASONS = frozenset({"checksum", "size"})
# The harness's exception for each of the agent's error types (any other: DeviceError).
_ERRORS: dict[str, type[NpuHilError]] = {
    "TimeoutError": TransportError,
    "JobError": ProtocolError,
    "ProtocolError": ProtocolError,
    "LayoutError": LayoutError,
}


@dataclass(frozen=True)
class JobSpec:
    """One inference job: a model artifact on this machine, the adapter that runs it, the inputs."""

    job_id: str
    adapter: str
    model: str | os.PathLike[str]
    inputs: tuple[InputSpec, ...]
    outputs: tuple[str, ...] | None = None
    adapter_options: Mapping[str, Any] = field(default_factory=dict)
    load_timeout_s: float = DEFAULT_TIMEOUTS["load"]
    run_timeout_s: float = DEFAULT_TIMEOUTS["run"]
    runs: int = DEFAULT_RUNS
    warmup: int = DEFAULT_WARMUP
    pin_clocks: bool = False
    canary: bytes | None = None
    """The pattern the agent fills every output buffer the adapter owns with before each run
    (:func:`npu_hil.harness.board.job.canary_for` makes one from the job id); None: no canary."""
    runtime_log_level: int | None = None  # on the runtime's own scale; None: its default


@dataclass(frozen=True)
class ModelRef:
    """The model a job names: its path relative to the agent's cache root (``--root``), and the
    artifact's sha256."""

    path: str
    sha256: str


def _check_input(spec: InputSpec, value: Any) -> np.ndarray:
    """The bytes to send for one input; LayoutError before anything is written when the array
    does not match its spec."""
    if spec.dtype not in DTYPES:
        raise LayoutError(f"inputs[{spec.name!r}]: dtype {spec.dtype!r} is not one of {DTYPES}")
    if len(spec.shape) > MAX_RANK or math.prod(spec.shape) > MAX_ELEMENTS:
        raise LayoutError(
            f"inputs[{spec.name!r}]: shape {spec.shape} exceeds the agent's bounds "
            f"(rank <= {MAX_RANK}, <= {MAX_ELEMENTS} elements)"
        )
    array = np.asarray(value)
    if spec.pass_through:
        if array.dtype != np.uint8 or array.ndim != 1:
            raise LayoutError(
                f"inputs[{spec.name!r}]: a pass-through input is a packed device buffer "
                f"(1-D uint8), got {array.dtype} with shape {array.shape}"
            )
    elif array.dtype != np.dtype(spec.dtype) or array.shape != tuple(spec.shape):
        raise LayoutError(
            f"inputs[{spec.name!r}]: expected {spec.dtype} {tuple(spec.shape)}, "
            f"got {array.dtype} {array.shape}"
        )
    return np.ascontiguousarray(array)


def _arrays_by_input(
    spec: JobSpec, input_arrays: Mapping[str, Any] | Sequence[Any]
) -> list[np.ndarray]:
    if isinstance(input_arrays, Mapping):
        unknown = sorted(set(input_arrays) - {i.name for i in spec.inputs})
        if unknown:
            raise LayoutError(f"inputs: {unknown} are not inputs of job {spec.job_id!r}")
        missing = [i.name for i in spec.inputs if i.name not in input_arrays]
        if missing:
            raise LayoutError(f"inputs: no array for {missing} (job {spec.job_id!r})")
        values = [input_arrays[i.name] for i in spec.inputs]
    else:
        values = list(input_arrays)
        if len(values) != len(spec.inputs):
            raise LayoutError(
                f"inputs: job {spec.job_id!r} has {len(spec.inputs)} inputs, "
                f"got {len(values)} arrays"
            )
    return [_check_input(i, v) for i, v in zip(spec.inputs, values, strict=True)]


def frame_job(
    spec: JobSpec, input_arrays: Mapping[str, Any] | Sequence[Any], model: ModelRef
) -> tuple[JobJson, list[memoryview]]:
    """A job as one request to the agent (the ``job`` op's inline form): the document, whose
    inputs carry their size instead of a file, and the input buffers that follow it in the same
    frame (whose trailer carries their sha256, computed as they are written). The model is one
    the board's cache already holds."""
    arrays = _arrays_by_input(spec, input_arrays)
    buffers = [a.reshape(-1).view(np.uint8).data for a in arrays]
    inputs: list[InputJson] = [
        {
            "name": ispec.name,
            "layout": ispec.layout,
            "shape": [int(d) for d in ispec.shape],
            "dtype": ispec.dtype,
            "pass_through": ispec.pass_through,
            "nbytes": b.nbytes,
        }
        for ispec, b in zip(spec.inputs, buffers, strict=True)
    ]
    document: JobJson = {
        "schema": JOB_SCHEMA,
        "job_id": spec.job_id,
        "model": {"path": model.path, "sha256": model.sha256},
        "adapter": spec.adapter,
        "adapter_options": dict(spec.adapter_options),
        "inputs": inputs,
        "outputs": None if spec.outputs is None else list(spec.outputs),
        "timeouts": {"load": float(spec.load_timeout_s), "run": float(spec.run_timeout_s)},
        "runs": int(spec.runs),
        "warmup": int(spec.warmup),
        "pin_clocks": bool(spec.pin_clocks),
    }
    if spec.canary is not None:
        document["canary"] = bytes(spec.canary).hex()
    if spec.runtime_log_level is not None:
        document["runtime_log_level"] = int(spec.runtime_log_level)
    return document, buffers


# --- the frames on the agent's stream ----------------------------------------------------------

# The hello's feature that says the agent reads framed jobs.
FRAMED_JOBS = "framed-jobs"


class StreamEnded(Exception):
    """The agent's stdout closed: the agent process is gone."""


class Receiver(Protocol):
    """What frames are read from: a resident agent's stream, or a one-shot agent's whole stdout."""

    def recv(self, n: int, timeout: float) -> bytes: ...


class Replay(io.BytesIO):
    """A finished one-shot agent's stdout read as a resident agent's stream is: the same frames,
    read by the same code; ``b""`` at its end, as the stream of an agent that exited."""

    def recv(self, n: int, timeout: float) -> bytes:
        return self.read(n)


def _receive(stream: Receiver, n: int, deadline: float, digest: Any = None) -> bytearray:
    """``n`` bytes straight into one buffer, each piece added to ``digest`` as it arrives."""
    data = bytearray(n)
    view = memoryview(data)
    filled = 0
    while filled < n:
        chunk = stream.recv(min(n - filled, BULK_CHUNK), max(0.0, deadline - time.monotonic()))
        if not chunk:
            raise StreamEnded
        view[filled : filled + len(chunk)] = chunk
        if digest is not None:
            digest.update(chunk)
        filled += len(chunk)
    return data


def recv_exactly(stream: Receiver, n: int, deadline: float) -> bytes:
    return bytes(_receive(stream, n, deadline))


def recv_buffer(stream: Receiver, n: int, deadline: float) -> tuple[bytearray, str]:
    """``n`` bytes straight into one buffer (the result's arrays are views of it), hashed piece
    by piece as they arrive; the buffer and its sha256."""
    digest = hashlib.sha256()
    return _receive(stream, n, deadline, digest), digest.hexdigest()


def bulk_request(message: Mapping[str, object], buffers: list[memoryview]) -> Iterator[bytes]:
    """A request frame carrying ``buffers`` after its message, as the pieces to send in turn
    (each input hashed piece by piece as it goes, the trailer last)."""
    return map(bytes, encode_bulk_frame(message, buffers))


@dataclass
class BulkAnswer:
    """A bulk frame as read: its message, its buffers, their sha256 as computed here while they
    arrived, and as the sender's trailer gives them."""

    message: dict[str, object]
    buffers: list[bytearray]
    ours: list[str]
    theirs: list[str]


def read_bulk(stream: Receiver, length: int, deadline: float) -> BulkAnswer:
    """The rest of a bulk frame whose header announced ``length`` bytes."""
    (message_bytes,) = BULK_PREFIX.unpack(recv_exactly(stream, BULK_PREFIX.size, deadline))
    if message_bytes > length - BULK_PREFIX.size:
        raise ValueError(f"a bulk frame's message of {message_bytes} bytes does not fit")
    message = decode_frame(recv_exactly(stream, message_bytes, deadline))
    sizes = bulk_sizes(message, length - BULK_PREFIX.size - message_bytes)
    received = [recv_buffer(stream, size, deadline) for size in sizes]
    trailer = recv_exactly(stream, DIGEST_BYTES * len(sizes), deadline) if sizes else b""
    theirs = [trailer[i : i + DIGEST_BYTES].hex() for i in range(0, len(trailer), DIGEST_BYTES)]
    return BulkAnswer(message, [d for d, _ in received], [h for _, h in received], theirs)


def read_frame(stream: Receiver, timeout: float) -> tuple[dict[str, object], BulkAnswer | None]:
    """The next frame: its message and, from a bulk frame, the bytes of its buffers;
    TransportError when the stream holds no frame there."""
    deadline = time.monotonic() + timeout
    header = recv_exactly(stream, FRAME_HEADER.size, deadline)
    try:
        length = frame_length(header)
        if is_bulk(header):
            answer = read_bulk(stream, length, deadline)
            return answer.message, answer
        return decode_frame(recv_exactly(stream, length, deadline)), None
    except (ValueError, UnicodeDecodeError) as exc:
        raise TransportError(f"the agent's stream is corrupted: {exc}") from None


# --- what comes back -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorRecord:
    """A device buffer as the runtime held it, with the runtime's own attributes."""

    name: str
    file: str
    sha256: str
    nbytes: int
    layout: str
    dtype: str
    shape: tuple[int, ...]
    attributes: Mapping[str, Any]
    data: np.ndarray = field(repr=False, compare=False)
    canary: bytes | None = None
    """The pattern the buffer started the run filled with (None: not filled, or no canary)."""


@dataclass(frozen=True)
class ErrorRecord:
    """A typed error the agent recorded. ``type`` is the agent's class (``DeviceError``,
    ``LayoutError``, ``UnsupportedError``, ``TimeoutError``, ``JobError``, ``AgentError``,
    ``OSError`` with ``errno``/``errno_name`` for the board's own disk trouble);
    :meth:`exception` maps it onto the harness's hierarchy."""

    type: str
    stage: str
    message: str
    code: int | None = None
    field: str | None = None
    reason: str | None = None
    detail: str | None = dataclasses.field(default=None, repr=False)
    errno: int | None = None  # an OS error on the board (type "OSError"): its number there
    errno_name: str | None = None  # and its name, e.g. "ENOSPC"

    def __str__(self) -> str:
        code = f" (code {self.code})" if self.code is not None else ""
        return f"{self.type} during {self.stage}: {self.message}{code}"

    def exception(self, context: str = "") -> NpuHilError:
        """The harness exception this record stands for.

        A timeout is infrastructure (the agent was restarted; retry per policy), as is a job
        the agent refused because a file's bytes did not match their announced size or sha256;
        any other refusal is a protocol disagreement; a layout refusal stays a LayoutError; the
        rest is the device's runtime refusing or failing.
        """
        message = f"{context}{self}"
        if self.type == "OSError":
            # The board's own disk or permissions (full, read-only): infrastructure. The errno
            # is the board's; its name says it on this machine too.
            number = getattr(_errno, self.errno_name or "", self.errno)
            return TransportError(message, errno=None if number is None else int(number))
        if self.type == "JobError" and self.reason in _INTEGRITY_REASONS:
            return TransportError(message)
        return _ERRORS.get(self.type, DeviceError)(message)


@dataclass(frozen=True)
class Canary:
    """result.json's ``canary``: the pattern, whether the outputs and the input buffers the
    adapter allocates started the last run filled with it, and why not where they did not."""

    pattern: bytes
    outputs: bool
    inputs: bool
    reason: str = ""


def read_canary(raw: Any, where: str) -> Canary | None:
    """The checked ``canary`` object of a result (None: the job carried none)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ProtocolError(f"{where}.canary: expected an object, got {str(raw)[:200]}")
    pattern = raw.get("pattern")
    try:
        value = bytes.fromhex(pattern) if isinstance(pattern, str) else b""
    except ValueError:
        value = b""
    if len(value) < 2:
        raise ProtocolError(f"{where}.canary.pattern: expected hex bytes, got {pattern!r}")
    flags = {key: raw.get(key, False) for key in ("outputs", "inputs")}
    if not all(isinstance(v, bool) for v in flags.values()):
        raise ProtocolError(f"{where}.canary: outputs and inputs must be true or false: {raw!r}")
    return Canary(value, flags["outputs"], flags["inputs"], str(raw.get("reason") or ""))


def read_board_state(raw: object, where: str) -> dict[str, dict[str, object]]:
    """The checked ``board_state`` object of a result ({} when the agent sent none): its
    readings by phase, each an object (what it holds is read where it is used)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(
        k in ("before", "after", "pinned") and isinstance(v, dict) for k, v in raw.items()
    ):
        raise ProtocolError(
            f"{where}.board_state: expected {{'before': {{..}}, 'after': {{..}}}}, "
            f"got {str(raw)[:200]}"
        )
    return raw


@dataclass(frozen=True)
class LogExcerpt:
    """One of the board's logs in a job's window, as the agent read it: ``source`` (``kmsg``,
    ``dmesg`` or ``stderr``; ``absent`` with ``why`` when it could not be read), the newest
    ``lines`` within the agent's caps and how many older ones it ``dropped``; ``lost`` counts
    kernel records the ring buffer overwrote before they were read."""

    source: str
    lines: tuple[str, ...] = ()
    why: str = ""
    dropped: int = 0
    lost: int = 0
    level: int | None = None
    env: str | None = None

    def to_dict(self) -> LogJson:
        """The excerpt as the agent sends it: the optional keys only where they say something."""
        optional = ("why", "dropped", "lost", "level", "env")
        out = {key: getattr(self, key) for key in optional if getattr(self, key)}
        return cast(LogJson, {"source": self.source, "lines": list(self.lines), **out})


@dataclass(frozen=True)
class BoardLog:
    """result.json's ``board_log``: the kernel's and the runtime's logs in the job's window."""

    kernel: LogExcerpt
    runtime: LogExcerpt


MAX_LOG_LINES = 1000
"""Far above the agent's own cap: a result holding more was not written by an agent."""


def read_board_log(raw: Any, where: str) -> BoardLog | None:
    """The checked ``board_log`` of a result (None: an agent that sent none)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ProtocolError(f"{where}.board_log: expected an object, got {str(raw)[:200]}")
    return BoardLog(
        _excerpt(raw.get("kernel"), f"{where}.board_log.kernel"),
        _excerpt(raw.get("runtime"), f"{where}.board_log.runtime"),
    )


def _excerpt(raw: Any, where: str) -> LogExcerpt:
    if raw is None:
        return LogExcerpt("absent", why="the agent did not read it")
    if not isinstance(raw, dict) or not isinstance(raw.get("source"), str):
        raise ProtocolError(f"{where}: expected an object with a source, got {str(raw)[:200]}")
    lines = raw.get("lines") or []
    if (
        not isinstance(lines, list)
        or len(lines) > MAX_LOG_LINES
        or not all(isinstance(x, str) for x in lines)
    ):
        raise ProtocolError(f"{where}.lines: expected at most {MAX_LOG_LINES} strings")
    numbers = {k: raw.get(k) or 0 for k in ("dropped", "lost")}
    if not all(_is_int(v) and v >= 0 for v in numbers.values()):
        raise ProtocolError(f"{where}: dropped and lost must be counts: {numbers!r}")
    level = raw.get("level")
    env = raw.get("env")
    return LogExcerpt(
        raw["source"],
        tuple(lines),
        str(raw.get("why") or ""),
        numbers["dropped"],
        numbers["lost"],
        level if _is_int(level) else None,
        env if isinstance(env, str) else None,
    )


@dataclass(frozen=True)
class Timings:
    load_s: float
    run_s: float
    copy_s: float
    total_s: float
    model_cached: bool
    adapter: Mapping[str, float] = field(default_factory=dict)
    # Every timed run's wall time around the runtime call, and the adapter's own figure per run
    # where it tells the run apart from its copies (empty from an agent that timed one run).
    runs_s: tuple[float, ...] = ()
    adapter_runs_s: tuple[float, ...] = ()
    warmup: int = 0


@dataclass(frozen=True)
class Result:
    """A verified job result: every buffer's size and sha256 checked and its bytes loaded."""

    schema: str
    job_id: str | None
    ok: bool
    adapter: str | None
    versions: Mapping[str, Any]
    timings: Timings
    inputs: tuple[TensorRecord, ...]
    outputs: tuple[TensorRecord, ...]
    errors: tuple[ErrorRecord, ...]
    document: Mapping[str, Any] = field(repr=False, compare=False)
    # The board's clocks, governors, temperatures and load before and after the timed runs, as
    # the agent read them (absent readings are listed, never filled in).
    board_state: Mapping[str, Any] = field(default_factory=dict)
    canary: Canary | None = None
    """What the agent filled with the job's canary (None: the job carried none)."""
    board_log: BoardLog | None = None  # the kernel's and runtime's logs in the job's window

    def output(self, name: str) -> TensorRecord:
        return _by_name(self.outputs, name, "output")

    def input(self, name: str) -> TensorRecord:
        return _by_name(self.inputs, name, "input")

    def error(self) -> NpuHilError | None:
        """The first error as a harness exception, or None for a clean run."""
        if not self.errors:
            return None
        return self.errors[0].exception(f"job {self.job_id}: ")

    def raise_for_errors(self) -> None:
        error = self.error()
        if error is not None:
            raise error

    def summary(self) -> str:
        lines = [f"job {self.job_id} on {self.adapter}: {'ok' if self.ok else 'failed'}"]
        lines += [f"  {e}" for e in self.errors]
        lines += [
            f"  {kind} {t.name}: {t.layout} {t.dtype} {list(t.shape)}, {t.nbytes} bytes"
            for kind, tensors in (("input", self.inputs), ("output", self.outputs))
            for t in tensors
        ]
        return "\n".join(lines)


def _by_name(tensors: tuple[TensorRecord, ...], name: str, kind: str) -> TensorRecord:
    for tensor in tensors:
        if tensor.name == name:
            return tensor
    raise KeyError(f"no {kind} {name!r}; the result has {[t.name for t in tensors]}")


def _is_int(value: object) -> bool:
    """An integer of a JSON document (``true`` is no count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _field(record: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = record.get(key)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ProtocolError(f"{where}.{key}: expected {kind.__name__}, got {value!r}")
    return value


def _blob_name(value: Any, where: str) -> str:
    """A buffer's file name from the agent must be a plain relative path: a kept job's view
    writes the buffer under it, and a hostile or broken result must not name anything else."""
    if not isinstance(value, str) or not value:
        raise ProtocolError(f"{where}.file: expected a file name, got {value!r}")
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts or "\\" in value or "\x00" in value:
        raise ProtocolError(f"{where}.file: {value!r} leaves the job's folder")
    return value


def result_records(
    document: Mapping[str, Any], where: str = RESULT_FILE
) -> list[tuple[str, int, dict[str, object], str]]:
    """The tensor records a result gives (inputs first) as (key, index, record, buffer name),
    each name a plain file name used once; a result that is not ours or whose major version
    this harness does not read is refused."""
    schema = parse_schema(document.get("schema"))
    if schema is None or schema[0] != RESULT_SCHEMA_NAME:
        raise ProtocolError(
            f"{where}: schema is {document.get('schema')!r}, expected {RESULT_SCHEMA!r}"
        )
    if schema[1] != SCHEMA_MAJOR:
        raise ProtocolError(
            f"{where}: schema {document['schema']!r} has major version {schema[1]}; this harness "
            f"reads {RESULT_SCHEMA} (deploy the agent that ships with this harness)"
        )
    placed: list[tuple[str, int, dict[str, object], str]] = []
    names: set[str] = set()
    for key in ("inputs", "outputs"):
        records = document.get(key)
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise ProtocolError(f"{where}.{key}: expected a list of tensor records")
        for index, record in enumerate(records):
            name = _blob_name(record.get("file"), f"{where}.{key}[{index}]")
            if name in names or name in (JOB_FILE, RESULT_FILE):
                raise ProtocolError(f"{where}.{key}[{index}].file: {name!r} is used twice")
            names.add(name)
            placed.append((key, index, record, name))
    return placed


def _load_tensor(
    record: Mapping[str, Any], name: str, data: bytearray, ours: str, where: str
) -> TensorRecord:
    """A tensor record with its buffer (``ours``: its sha256 as computed while it arrived)."""
    sha = _field(record, "sha256", str, where)
    nbytes = _field(record, "nbytes", int, where)
    shape = _field(record, "shape", list, where)
    if not all(_is_int(d) for d in shape):
        raise ProtocolError(f"{where}.shape: expected integers, got {shape!r}")
    attributes = record.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise ProtocolError(f"{where}.attributes: expected an object, got {attributes!r}")
    if len(data) != nbytes:
        raise TransportError(f"{name}: {len(data)} bytes came, the record says {nbytes}")
    if ours != sha.lower():
        raise TransportError(f"{name}: sha256 {ours}, the agent wrote {sha} ({where})")
    return TensorRecord(
        name=_field(record, "name", str, where),
        file=name,
        sha256=ours,
        nbytes=nbytes,
        layout=str(record.get("layout", "")),
        dtype=_field(record, "dtype", str, where),
        shape=tuple(shape),
        attributes=attributes,
        data=np.frombuffer(data, dtype=np.uint8),
    )


def error_record(raw: Any, where: str) -> ErrorRecord:
    """An error record of a result, or of an answer frame (a request the agent refused)."""
    if not isinstance(raw, dict):
        raise ProtocolError(f"{where}: expected an error record, got {raw!r}")
    code = raw.get("code")
    number, name = raw.get("errno"), raw.get("errno_name")
    return ErrorRecord(
        type=_field(raw, "type", str, where),
        stage=str(raw.get("stage", "")),
        message=_field(raw, "message", str, where),
        code=code if _is_int(code) else None,
        field=raw.get("field") if isinstance(raw.get("field"), str) else None,
        reason=raw.get("reason") if isinstance(raw.get("reason"), str) else None,
        detail=raw.get("detail") if isinstance(raw.get("detail"), str) else None,
        errno=number if _is_int(number) else None,
        errno_name=name if isinstance(name, str) and name.isidentifier() else None,
    )


def _timings(raw: Any, where: str) -> Timings:
    if not isinstance(raw, dict):
        raise ProtocolError(f"{where}.timings: expected an object, got {raw!r}")

    def seconds(key: str) -> float:
        value = raw.get(key, 0.0)
        if not _is_number(value):
            raise ProtocolError(f"{where}.timings.{key}: expected seconds, got {value!r}")
        return float(value)

    def durations(key: str) -> tuple[float, ...]:
        values = raw.get(key, [])
        if (
            not isinstance(values, list)
            or len(values) > MAX_RUNS
            or not all(_is_number(v) and math.isfinite(v) and v >= 0 for v in values)
        ):
            raise ProtocolError(
                f"{where}.timings.{key}: expected at most {MAX_RUNS} durations in seconds, "
                f"got {str(values)[:200]}"
            )
        return tuple(float(v) for v in values)

    warmup = raw.get("warmup", 0)
    if not _is_int(warmup) or warmup < 0:
        raise ProtocolError(f"{where}.timings.warmup: expected a count, got {warmup!r}")
    runs_s = durations("runs_s")
    adapter_runs_s = durations("adapter_runs_s")
    if adapter_runs_s and len(adapter_runs_s) != len(runs_s):
        raise ProtocolError(
            f"{where}.timings.adapter_runs_s: {len(adapter_runs_s)} durations for "
            f"{len(runs_s)} runs"
        )
    adapter = raw.get("adapter") or {}
    return Timings(
        runs_s=runs_s,
        adapter_runs_s=adapter_runs_s,
        warmup=warmup,
        load_s=seconds("load_s"),
        run_s=seconds("run_s"),
        copy_s=seconds("copy_s"),
        total_s=seconds("total_s"),
        model_cached=bool(raw.get("model_cached", False)),
        adapter=dict(adapter) if isinstance(adapter, dict) else {},
    )


def result_from_document(
    document: Mapping[str, object], answer: BulkAnswer | None, *, where: str, job_id: str
) -> Result:
    """A job's verified result: the document, and each record's buffer the answer's buffer of
    the same place (inputs first), of the size the record gives, with the sha256 the agent's
    trailer gives in the record and the one computed here as it arrived compared with it."""
    placed = result_records(document, where)  # schema, then file names, before anything is read
    answer = answer or BulkAnswer({}, [], [], [])
    if len(answer.buffers) != len(placed):
        raise TransportError(
            f"{where}: the answer carries {len(answer.buffers)} buffers for {len(placed)} records"
        )
    found_id = document.get("job_id")
    if found_id != job_id:
        raise ProtocolError(f"{where}: result of job {found_id!r}, expected job {job_id!r}")
    errors = document.get("errors")
    if not isinstance(errors, list):
        raise ProtocolError(f"{where}.errors: expected a list, got {errors!r}")
    error_records = tuple(error_record(e, f"{where}.errors[{i}]") for i, e in enumerate(errors))
    ok = _field(document, "ok", bool, where)
    if ok == bool(error_records):
        raise ProtocolError(f"{where}: ok is {ok} with {len(error_records)} error records")
    versions = document.get("versions") or {}
    if not isinstance(versions, dict):
        raise ProtocolError(f"{where}.versions: expected an object, got {versions!r}")
    canary = read_canary(document.get("canary"), where)
    tensors: dict[str, list[TensorRecord]] = {"inputs": [], "outputs": []}
    for at, (key, index, record, name) in enumerate(placed):
        record["sha256"] = answer.theirs[at]
        tensor = _load_tensor(
            record, name, answer.buffers[at], answer.ours[at], f"{where}.{key}[{index}]"
        )
        if canary is not None and getattr(canary, key):
            tensor = dataclasses.replace(tensor, canary=canary.pattern)
        tensors[key].append(tensor)
    adapter = document.get("adapter")
    return Result(
        schema=str(document["schema"]),
        job_id=found_id if isinstance(found_id, str) else None,
        ok=ok,
        adapter=adapter if isinstance(adapter, str) else None,
        versions=versions,
        timings=_timings(document.get("timings"), where),
        inputs=tuple(tensors["inputs"]),
        outputs=tuple(tensors["outputs"]),
        errors=error_records,
        document=document,
        board_state=read_board_state(document.get("board_state"), where),
        canary=canary,
        board_log=read_board_log(document.get("board_log"), where),
    )
