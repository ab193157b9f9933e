"""The JSON documents the agent and the host exchange, each as a TypedDict of its keys (a plain
``dict[str, object]`` until checked where it enters: DESIGN.md). Python 3.8's typing: keys a
document may leave out are declared in a ``total=False`` subclass."""

from __future__ import annotations

from typing import TypedDict

Seconds = float


class _ErrorJson(TypedDict):
    type: str
    stage: str
    message: str


class ErrorJson(_ErrorJson, total=False):
    """An error record in a result or an answer (``wire.failure``)."""

    code: int | None
    field: str
    reason: str
    detail: str
    errno: int
    errno_name: str


class ModelJson(TypedDict):
    """The job's model: its path in the agent's cache and its sha256."""

    path: str
    sha256: str


class InputJson(TypedDict):
    """A job's input: the buffer of the same index in the job's frame is ``nbytes`` long."""

    name: str
    nbytes: int
    layout: str
    shape: list[int]
    dtype: str
    pass_through: bool


class TimeoutsJson(TypedDict):
    load: Seconds
    run: Seconds


class _JobJson(TypedDict):
    schema: str
    job_id: str
    model: ModelJson
    adapter: str
    adapter_options: dict[str, object]
    inputs: list[InputJson]
    outputs: list[str] | None
    timeouts: TimeoutsJson
    runs: int
    warmup: int
    pin_clocks: bool


class JobJson(_JobJson, total=False):
    """A job document (``npu-hil-job/1``) as the host writes it: the message of a job's bulk
    frame. The agent takes what comes as unchecked until ``job.validate_job`` made a ``Job``."""

    canary: str
    runtime_log_level: int


class _TensorJson(TypedDict):
    name: str
    file: str
    nbytes: int
    layout: str
    dtype: str
    shape: list[int]
    attributes: dict[str, object]


class TensorJson(_TensorJson, total=False):
    """A device buffer's record in a result; ``sha256`` is the answer trailer's when framed."""

    sha256: str


class _TimingsJson(TypedDict):
    load_s: Seconds
    run_s: Seconds
    copy_s: Seconds
    total_s: Seconds
    model_cached: bool


class TimingsJson(_TimingsJson, total=False):
    """A job's timings; the per-run lists once the runs started."""

    adapter: dict[str, Seconds]
    runs: int
    warmup: int
    runs_s: list[Seconds]
    adapter_runs_s: list[Seconds]


class CanaryJson(TypedDict):
    """What a job's canary pattern was and which buffers the adapter filled with it."""

    pattern: str
    outputs: bool
    inputs: bool
    reason: str


class UnreadableJson(TypedDict):
    path: str
    error: str


class DevfreqJson(TypedDict):
    """A devfreq device (the NPU's, the DDR's): its governor and clock."""

    device: str
    governor: str | None
    cur_freq_hz: int | None


class CpuPolicyJson(TypedDict):
    """A cpufreq policy: its governor and clock."""

    policy: str
    governor: str | None
    cur_freq_khz: int | None


class ThermalJson(TypedDict):
    """A thermal zone and its temperature in millidegrees."""

    zone: str
    type: str | None
    temp_mc: int | None


class BoardStateJson(TypedDict):
    """The board's clocks, governors, temperatures and load (``boardstate.read_board_state``)."""

    cpu: list[CpuPolicyJson]
    npu: list[DevfreqJson]
    ddr: list[DevfreqJson]
    thermal: list[ThermalJson]
    loadavg: list[float] | None
    absent: list[str]
    unreadable: list[UnreadableJson]


class _GovernorJson(TypedDict):
    path: str
    was: str | None


class GovernorJson(_GovernorJson, total=False):
    """A governor file set to ``performance`` for a job's runs (``set``), with ``error`` when it
    could not be set or, after the runs, put back."""

    set: str
    error: str


class PinnedJson(TypedDict):
    governors: list[GovernorJson]
    not_restored: list[GovernorJson]


class BoardStatesJson(TypedDict, total=False):
    """The board's state just before and just after a job's timed runs, and its pinned clocks."""

    before: BoardStateJson
    after: BoardStateJson
    pinned: PinnedJson


class _LogJson(TypedDict):
    source: str
    lines: list[str]


class LogJson(_LogJson, total=False):
    """A board log's lines during a job: the kernel's (``source`` says from where) or the
    runtime's (``level`` and ``env``); ``why`` when there are none, ``dropped`` and ``lost``
    when the bound cut some."""

    why: str
    dropped: int
    lost: int
    level: int | None
    env: str | None


class BoardLogJson(TypedDict):
    kernel: LogJson
    runtime: LogJson


class _ResultJson(TypedDict):
    schema: str
    job_id: str | None
    ok: bool
    adapter: str | None
    versions: dict[str, str]
    timings: TimingsJson
    inputs: list[TensorJson]
    outputs: list[TensorJson]
    errors: list[ErrorJson]


class ResultJson(_ResultJson, total=False):
    """A job's result (``npu-hil-result/1``): the message of its answer's bulk frame."""

    board_log: BoardLogJson
    board_state: BoardStatesJson
    canary: CanaryJson


class CmaJson(TypedDict):
    """A CMA area's page counters (None: not readable)."""

    area: str
    alloc_pages_success: int | None
    alloc_pages_fail: int | None
    release_pages_success: int | None


class DmabufJson(TypedDict, total=False):
    """The DMA buffers the kernel counts: how many and their bytes."""

    source: str
    buffers: int
    bytes: int
    truncated: bool


class MemoryJson(TypedDict):
    """The agent's memory and the board's CMA and DMA buffers (``boardstate.read_memory``)."""

    pid: int
    process: dict[str, int | None]
    meminfo: dict[str, int | None]
    cma: list[CmaJson]
    dmabuf: DmabufJson | None
    absent: list[str]
    unreadable: list[UnreadableJson]


class IdentityJson(TypedDict):
    """What the board says it is: its device tree's compatible strings and model."""

    source: str
    compatible: list[str]
    model: str | None
    absent: bool
    error: str | None
