"""A job as the agent accepts it: the job document's schema, its bounds, and the model it may name
(``docs/runtime/agent.md``, The job document). Standard library only: the host imports it too, and
:class:`InputSpec` is the one description of an input on both sides."""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .loader import available_adapters, is_adapter_name
from .wire import JOB_SCHEMA, JOB_SCHEMA_NAME, SCHEMA_MAJOR, failure, parse_schema

if TYPE_CHECKING:
    from .documents import ErrorJson

T = TypeVar("T")

# Refusal bounds for a job: far above any real NPU tensor, low enough that a hostile shape cannot
# make the agent allocate the board out of memory or overflow a size computation.
MAX_ELEMENTS = 2**31
MAX_RANK = 8
MAX_INPUTS = 256
# Bytes, not elements, bound what an input may take (2**31 float64 elements would be 16 GiB):
# checked against the size an input announces before a byte of it is read, pass-through
# inputs included.
MAX_INPUT_BYTES = 1 << 30
MAX_JOB_INPUT_BYTES = 2 << 30
MAX_TIMEOUT_S = 24 * 3600.0
DEFAULT_TIMEOUTS = {"load": 120.0, "run": 60.0}
# Latency runs: each one is a runtime call bounded by the run timeout, so the caps keep a job's
# worst case (and the per-run durations in result.json) finite.
DEFAULT_RUNS = 1
DEFAULT_WARMUP = 0
MAX_RUNS = 10000
MAX_WARMUP = 1000
MAX_LOG_LEVEL = 9
# The element types a job may name, with their sizes in bytes (numpy's, without numpy: the bits
# in the name, and a byte for bool).
_DTYPE_NAMES = "bool int8 uint8 int16 uint16 int32 uint32 int64 uint64 float16 float32 float64"
DTYPES = tuple(_DTYPE_NAMES.split())
DTYPE_SIZES = {d: 1 if d == "bool" else int(d.lstrip("uintfloa")) // 8 for d in DTYPES}
SHA256_RE = re.compile(r"[0-9a-f]{64}\Z")
CANARY_RE = re.compile(r"(?:[0-9a-f]{2}){2,64}\Z")
CANARY_BYTES = 8
# Fills a runtime, an allocator or a debugger may leave in memory on its own (zeroed pages,
# erased flash, the harness's own dirty-padding value, 0xCD/0xDD/0xFD debug heaps): a canary byte
# is never one of them, so a buffer holding the pattern was filled by the agent.
COMMON_FILLS = frozenset((0x00, 0xFF, 0xA5, 0x5A, 0xCD, 0xDD, 0xFD, 0xAA, 0x55))


def canary_for(job_id: str) -> bytes:
    """The job's canary: eight bytes derived from its id (two jobs differ, and a result can be
    checked against the pattern its job was given), none of them a common fill, not all equal.
    Eight bytes keep the pattern in phase with 1-, 2-, 4- and 8-byte elements."""
    digest = bytearray(hashlib.sha256(b"npu-hil canary\0" + job_id.encode("utf-8")).digest())
    pattern = bytearray()
    for byte in digest:
        if byte not in COMMON_FILLS and (len(pattern) == 0 or byte != pattern[-1]):
            pattern.append(byte)
        if len(pattern) == CANARY_BYTES:
            break
    while len(pattern) < CANARY_BYTES:  # astronomically unlikely: 32 bytes gave too few
        pattern.append(0x3C if len(pattern) % 2 else 0xC3)
    return bytes(pattern)


def check_canary(field: str, value: object) -> bytes | None:
    """A job's canary from its hex form (None: no canary), refused unless it is 2 to 64 bytes
    and not a single repeated byte (that would be a fill, not a pattern)."""
    if value is None:
        return None
    if not isinstance(value, str) or not CANARY_RE.match(value):
        raise JobRefused(field, "type", f"expected 2 to 64 bytes as lower-case hex, got {value!r}")
    pattern = bytes.fromhex(value)
    if len(set(pattern)) == 1:
        raise JobRefused(
            field, "type", f"{value!r} is one repeated byte, a common fill; a canary is a pattern"
        )
    return pattern


class JobRefused(Exception):
    """A job the agent will not run. ``field`` names the offending field, ``reason`` is a short
    machine-readable class (``checksum`` and ``size`` mean a buffer's bytes do not match what the
    host announced, which the host treats as a corrupted transfer)."""

    stage = "validate"

    def __init__(self, field: str, reason: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = reason

    def record(self) -> ErrorJson:
        return failure("JobError", self.stage, str(self), field=self.field, reason=self.reason)


@dataclass(frozen=True)
class InputSpec:
    """One model input. Without ``pass_through`` the array is the logical tensor (``shape``,
    ``dtype``, C order) and the runtime converts it; with it the array is the packed device buffer
    (uint8, as ``Layout.pack`` returns it) in ``layout``, and ``shape``/``dtype`` describe the
    logical tensor it holds."""

    name: str
    layout: str
    shape: tuple[int, ...]
    dtype: str
    pass_through: bool = False


@dataclass(frozen=True)
class JobInput:
    """An input of a validated job: its spec and the size of its buffer as announced (the
    frame's buffer of the same index is checked against it before it is used)."""

    spec: InputSpec
    nbytes: int


@dataclass(frozen=True)
class Job:
    """A validated job: its model resolved and confined to the cache, every number bounded."""

    job_id: str
    adapter: str
    options: dict[str, object]
    model_path: str
    model_sha256: str
    inputs: list[JobInput]
    outputs: list[str] | None
    timeouts: dict[str, float]
    runs: int = DEFAULT_RUNS
    warmup: int = DEFAULT_WARMUP
    pin_clocks: bool = False
    canary: bytes | None = None
    log_level: int | None = None


def _require(obj: Mapping[str, object], field: str, key: str, kind: type[T], what: str) -> T:
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
    timeouts = dict(DEFAULT_TIMEOUTS)
    if value is None:
        return timeouts
    if not isinstance(value, dict):
        raise JobRefused("timeouts", "type", f"expected an object, got {value!r}")
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


def _count(doc: Mapping[str, object], key: str, default: T, low: int, high: int) -> T | int:
    """An integer in [low, high], or ``default`` when absent or null (a null default: null is
    a value the field may take)."""
    value = doc.get(key, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        null = "null or " if default is None else ""
        raise JobRefused(
            key, "type", f"expected {null}an integer in [{low}, {high}], got {value!r}"
        )
    return value


def _flag(doc: Mapping[str, object], key: str, field: str = "") -> bool:
    value = doc.get(key, False)
    if not isinstance(value, bool):
        raise JobRefused(field + key, "type", f"expected true or false, got {value!r}")
    return value


def validate_job(doc: Mapping[str, object], root: str | None, adapter_dirs: list[str]) -> Job:
    """Check a job document (as it came: its values unchecked) against the protocol; raise
    JobRefused naming the field. The model is named in the cache (``root``) and each input gives
    its ``nbytes``."""
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
    if not is_adapter_name(adapter):
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
    model_path = _model_path(model.get("path"), root)

    raw_inputs = _require(doc, "", "inputs", list, "a list of inputs")
    if len(raw_inputs) > MAX_INPUTS:
        raise JobRefused(
            "inputs", "shape", f"{len(raw_inputs)} inputs exceed the cap of {MAX_INPUTS}"
        )
    inputs = []
    names = set()
    for index, raw in enumerate(raw_inputs):
        item = _input(index, raw)
        if item.spec.name in names:
            raise JobRefused(f"inputs[{index}].name", "type", f"{item.spec.name!r} appears twice")
        names.add(item.spec.name)
        inputs.append(item)
    total = sum(item.nbytes for item in inputs)
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
        job_id,
        adapter,
        options,
        model_path,
        sha,
        inputs,
        outputs,
        _timeouts(doc.get("timeouts")),
        runs=_count(doc, "runs", DEFAULT_RUNS, 1, MAX_RUNS),
        warmup=_count(doc, "warmup", DEFAULT_WARMUP, 0, MAX_WARMUP),
        pin_clocks=_flag(doc, "pin_clocks"),
        canary=check_canary("canary", doc.get("canary")),
        log_level=_count(doc, "runtime_log_level", None, 0, MAX_LOG_LEVEL),
    )


def _model_path(rel: object, root: str | None) -> str:
    """The model lives in the cache root (deployed once per content); its path may not leave it,
    not even through a symlink."""
    field = "model.path"
    where = "the model cache"
    if root is None:
        raise JobRefused(field, "missing", "a job needs the agent's model cache (--root)")
    if not isinstance(rel, str) or not rel:
        raise JobRefused(field, "path", f"expected a relative file path, got {rel!r}")
    if "\x00" in rel:
        raise JobRefused(field, "path", f"{rel!r} contains a NUL byte")
    if rel.startswith(("/", "\\")) or os.path.isabs(rel):
        raise JobRefused(
            field, "path", f"{rel!r} is an absolute path; paths are relative to {where}"
        )
    if ".." in re.split(r"[/\\]", rel):
        raise JobRefused(field, "path", f"{rel!r} leaves {where}")
    base = os.path.realpath(root)
    if not os.path.lexists(os.path.join(base, rel)):
        raise JobRefused(field, "missing", f"{rel!r} does not exist in {where}")
    full = os.path.realpath(os.path.join(base, rel))
    if full != base and not full.startswith(base.rstrip(os.sep) + os.sep):
        raise JobRefused(
            field, "path", f"{rel!r} leaves {where} through a symlink (it resolves to {full})"
        )
    if not os.path.exists(full):
        raise JobRefused(field, "missing", f"{rel!r} does not exist in {where}")
    if not os.path.isfile(full):
        raise JobRefused(field, "path", f"{rel!r} is not a regular file")
    return full


def _input(index: int, raw: object) -> JobInput:
    field = f"inputs[{index}]."
    if not isinstance(raw, dict):
        raise JobRefused(f"inputs[{index}]", "type", f"expected an object, got {raw!r}")
    name = _require(raw, field, "name", str, "a string")
    layout = raw.get("layout", "")
    if not isinstance(layout, str):
        raise JobRefused(field + "layout", "type", f"expected a string, got {layout!r}")
    shape = _shape(field + "shape", raw.get("shape"))
    dtype = _require(raw, field, "dtype", str, "a dtype name")
    if dtype not in DTYPES:
        raise JobRefused(field + "dtype", "dtype", f"{dtype!r} is not one of {', '.join(DTYPES)}")
    pass_through = _flag(raw, "pass_through", field)
    want = math.prod(shape) * DTYPE_SIZES[dtype]
    if want > MAX_INPUT_BYTES:
        raise JobRefused(
            field + "shape", "shape", f"{shape} {dtype} needs {want} bytes (cap {MAX_INPUT_BYTES})"
        )
    spec = InputSpec(name, layout, tuple(shape), dtype, pass_through)
    where = field + "nbytes"
    # Its bytes are the frame's buffer of the same index (whose sha256 is the frame's).
    size = raw.get("nbytes")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise JobRefused(where, "type", f"expected a byte count, got {size!r}")
    if size > MAX_INPUT_BYTES:
        raise JobRefused(where, "size", f"the buffer holds {size} bytes (cap {MAX_INPUT_BYTES})")
    if not pass_through and size != want:
        raise JobRefused(
            where, "size", f"the buffer holds {size} bytes; shape {shape} {dtype} needs {want}"
        )
    return JobInput(spec, size)


def check_buffers(job: Job, buffers: list[Any], damaged: tuple[int, ...]) -> None:
    """The frame's input buffers against the job's inputs: one each, of the size announced, and
    none whose sha256 on arrival was not the sender's (``damaged``: their indices)."""
    if len(buffers) != len(job.inputs):
        raise JobRefused(
            "inputs",
            "size",
            f"the frame carries {len(buffers)} buffers for {len(job.inputs)} inputs",
        )
    for index, (item, data) in enumerate(zip(job.inputs, buffers)):  # noqa: B905 - counted above
        if len(data) != item.nbytes:
            raise JobRefused(
                f"inputs[{index}].nbytes",
                "size",
                f"the frame's buffer holds {len(data)} bytes; the input announces {item.nbytes}",
            )
        if index in damaged:
            raise JobRefused(
                f"inputs[{index}].sha256",
                "checksum",
                f"the buffer arrived with another sha256 than its sender's ({item.nbytes} bytes)",
            )
