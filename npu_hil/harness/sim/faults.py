"""Faults a simulated board injects on purpose, so the harness can prove it catches each one: a
name and JSON-friendly parameters (it travels in a job's ``adapter_options``); each fault:
docs/runtime/agent.md, "Faults". A buffer fault that applies to no tensor of a run is an error,
never a silent no-op: a test that thinks it injected a fault must really have.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from typing_extensions import TypedDict

from npu_hil.harness.board.kernlog import REAL_KMSG, kmsg_path, parse_record
from npu_hil.harness.codec import BlockedLayout, get_layout
from npu_hil.harness.errors import LayoutError
from npu_hil.harness.simkit.base import HeldInput
from npu_hil.harness.simkit.errors import SimConfigError, SimRefusal
from npu_hil.harness.simkit.tensors import SimTensor
from npu_hil.targets.log_signatures import fault_lines
from npu_hil.targets.registry import unit_for

API_PATH_KINDS = ("normal", "zero-copy")
APPLIES_TO = ("outputs", "inputs", "all")
MAX_PERCENT = 10000
NOISE_FLOOR = 0.01
"""``noisy-latency``'s smallest factor: a run never takes no time (or less)."""
_COMMON = ("applies_to", "tensors")
_PARAMS: dict[str, tuple[str, ...]] = {
    # Faults in the buffers a run hands back (apply_buffer_faults, as accuracy-drift is).
    "wrong-alignment": ("layout_params", *_COMMON),
    "swapped-channel-groups": ("groups", "group_size", *_COMMON),
    "byte-swap": _COMMON,
    "dirty-padding": ("value", *_COMMON),
    "truncated-output": ("drop", *_COMMON),
    "garbage": ("seed", *_COMMON),
    "unwritten-output": ("fraction", "drop", *_COMMON),
    # A fault that needs the board's memory of earlier runs: applied by the runtime itself.
    "stale-output": ("tensors",),
    # A fault in what the model reads of its inputs, on one API path.
    "unaligned-width": ("path", "tensors"),
    "hang": ("seconds",),
    "crash": ("signal", "exit_code"),
    "slow": ("percent",),
    "noisy-latency": ("percent", "seed"),
    "accuracy-drift": ("lsb", "fraction", "seed", *_COMMON),
    # A soak's faults: memory kept per run, a share of runs failing (apply_soak_faults).
    "leak": ("kib",),
    "flaky-errors": ("rate", "seed"),
    # Faults the board's own logs tell (apply_log_fault): applied by the runtime at load or run.
    "npu-timeout": (),
    "oom-kill": (),
    "bad-model-version": (),
}
FAULT_NAMES = tuple(_PARAMS)
"""Every fault, by kind: buffer, state, input, process, timing, accuracy, soak, log."""


class FaultParams(TypedDict, total=False):
    """A fault's parameters (:data:`_PARAMS` says which each fault takes), as checked."""

    layout_params: Mapping[str, object]
    applies_to: str
    tensors: list[str]
    groups: list[int]
    group_size: int
    value: int
    drop: int
    fraction: float
    seed: int
    path: str
    seconds: float | None
    signal: str
    exit_code: int
    percent: float
    lsb: int
    kib: int
    rate: float


class FaultDocument(FaultParams):
    """:meth:`Fault.to_dict`: a fault as a run's options and its record name it."""

    name: str


@dataclass(frozen=True)
class Fault:
    """One fault: its name and parameters."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in _PARAMS:
            raise SimConfigError(f"unknown fault {self.name!r}; faults: {', '.join(FAULT_NAMES)}")
        unknown = sorted(set(self.params) - set(_PARAMS[self.name]))
        if unknown:
            accepted = ", ".join(_PARAMS[self.name]) or "none"
            raise SimConfigError(
                f"fault {self.name}: unknown parameter(s) {', '.join(unknown)}; "
                f"accepted: {accepted}"
            )
        _check_params(self.name, self.params)

    @classmethod
    def parse(cls, spec: Any) -> Fault:
        """A fault from its name, ``{"name": ..., **params}`` or ``{"name": ..., "params": {}}``."""
        if isinstance(spec, Fault):
            return spec
        if isinstance(spec, str):
            return cls(spec)
        if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
            rest = {k: v for k, v in spec.items() if k != "name"}
            if set(rest) == {"params"} and isinstance(rest["params"], Mapping):
                rest = dict(rest["params"])
            return cls(spec["name"], dict(rest))
        raise SimConfigError(f"a fault is a name or a mapping with a 'name', got {spec!r}")

    def to_dict(self) -> FaultDocument:
        # The parameters were checked when the fault was made (_check_params).
        return cast(FaultDocument, {"name": self.name, **self.params})

    @property
    def applies_to(self) -> str:
        return str(self.params.get("applies_to", "outputs"))


def parse_faults(specs: Iterable[Any] | None) -> tuple[Fault, ...]:
    if specs is None:
        return ()
    if isinstance(specs, str | Mapping):
        specs = [specs]
    return tuple(Fault.parse(spec) for spec in specs)


def _check_params(name: str, params: Mapping[str, Any]) -> None:
    def fail(key: str, expected: str) -> None:
        raise SimConfigError(f"fault {name}: {key} must be {expected}, got {params[key]!r}")

    def is_int(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    def number_up_to(key: str, high: int) -> None:
        if params.get(key) is not None and not (is_number(params[key]) and 0 < params[key] <= high):
            fail(key, f"a number in (0, {high}]")

    if params.get("applies_to", "outputs") not in APPLIES_TO:
        fail("applies_to", " / ".join(APPLIES_TO))
    tensors = params.get("tensors")
    if tensors is not None and (
        isinstance(tensors, str) or not all(isinstance(t, str) for t in tensors)
    ):
        fail("tensors", "a list of tensor names")
    groups = params.get("groups")
    if groups is not None and not (
        isinstance(groups, list | tuple)
        and len(groups) == 2
        and all(is_int(g) and g >= 0 for g in groups)
        and groups[0] != groups[1]
    ):
        fail("groups", "two different group numbers")
    for key, low, high in (
        ("group_size", 1, 1 << 16),
        ("value", 1, 255),
        ("drop", 1, 1 << 40),
        ("exit_code", 0, 255),
        ("kib", 1, 65536),
    ):
        if key in params and not (is_int(params[key]) and low <= params[key] <= high):
            fail(key, f"an integer in [{low}, {high}]")
    number_up_to("fraction", 1)
    if "fraction" in params and "drop" in params:
        raise SimConfigError(f"fault {name}: give fraction or drop, not both")
    if "seed" in params and not is_int(params["seed"]):
        fail("seed", "an integer")
    seconds = params.get("seconds")
    if seconds is not None and (
        isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0
    ):
        fail("seconds", "a number of seconds >= 0 (or null: forever)")
    if "signal" in params and not (
        isinstance(params["signal"], str) and hasattr(signal, params["signal"])
    ):
        fail("signal", "a signal name such as SIGSEGV")
    if "layout_params" in params and not isinstance(params["layout_params"], Mapping):
        fail("layout_params", "a mapping of layout parameters")
    number_up_to("percent", MAX_PERCENT)
    if "lsb" in params and not (is_int(params["lsb"]) and params["lsb"] >= 1):
        fail("lsb", "an integer >= 1")
    number_up_to("rate", 1)
    if params.get("path", "normal") not in API_PATH_KINDS:
        fail("path", " or ".join(API_PATH_KINDS))


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


# ------------------------------------------------------------------------- buffer faults


def apply_buffer_faults(
    faults: Iterable[Fault], inputs: list[SimTensor], outputs: list[SimTensor]
) -> None:
    """Apply the buffer faults and the accuracy fault, in order, to the tensors each one
    selects."""
    for fault in faults:
        if fault.name not in _APPLY:
            continue
        chosen = _select(fault, inputs, outputs)
        apply, when = _APPLY[fault.name]
        if not any([apply(tensor, fault.params, i) for i, tensor in enumerate(chosen)]):
            names = ", ".join(t.name for t in chosen) or "none"
            raise SimConfigError(
                f"fault {fault.name} applies to no tensor of this run (selected: {names}; "
                f"it needs {when})"
            )


def _select(fault: Fault, inputs: list[SimTensor], outputs: list[SimTensor]) -> list[SimTensor]:
    pool = {"outputs": outputs, "inputs": inputs, "all": [*inputs, *outputs]}[fault.applies_to]
    names = fault.params.get("tensors")
    if names is None:
        return pool
    unknown = sorted(set(names) - {t.name for t in pool})
    if unknown:
        raise SimConfigError(
            f"fault {fault.name}: no {fault.applies_to} tensor named {', '.join(unknown)}"
        )
    return [t for t in pool if t.name in names]


def _values(tensor: SimTensor, fault: str) -> np.ndarray:
    try:
        return tensor.codec_layout.unpack(tensor.data)
    except LayoutError:
        raise SimConfigError(
            f"fault {fault} on {tensor.name!r}: the buffer no longer has its layout's length "
            "(put truncated-output and wrong-alignment last)"
        ) from None


def _wrong_alignment(tensor: SimTensor, params: Mapping[str, Any], _: int) -> bool:
    layout = tensor.codec_layout
    values = _values(tensor, "wrong-alignment")
    given = params.get("layout_params")
    # Else the parameters a misbehaving runtime might use instead of the table's, in the vendor
    # unit's order (the ones the diff's forensics also tries come first).
    unit_variants = unit_for(layout.target).fault_variants
    variants: list[Mapping[str, object]] = [dict(given)] if given is not None else []
    if given is None and unit_variants is not None:
        variants = list(unit_variants(layout))
    for variant in variants:
        try:
            other = get_layout(
                layout.target,
                layout.name,
                layout.shape,
                layout.dtype,
                role=layout.role,
                **{**layout.params, **variant},
            )
        except LayoutError as exc:
            if given is not None:
                raise SimConfigError(f"fault wrong-alignment: {exc.message}") from None
            continue
        packed = other.pack(values)
        if packed.size != tensor.data.size or not np.array_equal(packed, tensor.data):
            tensor.data = packed
            return True
    return False


def _swapped_channel_groups(tensor: SimTensor, params: Mapping[str, Any], _: int) -> bool:
    layout = tensor.codec_layout
    if "c" not in layout.axis_names:
        return False
    axis = layout.axis_names.index("c")
    channels = layout.shape[axis]
    a, b = params.get("groups", (0, 1))
    size = int(params.get("group_size", 0)) or layout.block_of(axis)
    if (max(a, b) + 1) * size > channels:
        if "group_size" in params or max(a, b) >= channels:
            return False
        size = 1  # fewer than two whole groups: swap single channels instead
    values = _values(tensor, "swapped-channel-groups")
    swapped = values.copy()
    by_channel, into = np.moveaxis(values, axis, 0), np.moveaxis(swapped, axis, 0)
    into[a * size : (a + 1) * size] = by_channel[b * size : (b + 1) * size]
    into[b * size : (b + 1) * size] = by_channel[a * size : (a + 1) * size]
    _write_data(tensor, swapped)
    return True


def _write_data(tensor: SimTensor, values: np.ndarray) -> None:
    """``values`` packed into the tensor's buffer, its data bytes only: padding stays as the
    device left it."""
    data = ~tensor.codec_layout.padding_mask()
    tensor.data[data] = tensor.codec_layout.pack(values)[data]


def _byte_swap(tensor: SimTensor, params: Mapping[str, Any], _: int) -> bool:
    even = tensor.data.size // 2 * 2
    if even == 0:
        return False
    pairs = tensor.data[:even].reshape(-1, 2)
    tensor.data[:even] = pairs[:, ::-1].reshape(-1)
    return True


def _dirty_padding(tensor: SimTensor, params: Mapping[str, Any], _: int) -> bool:
    mask = tensor.codec_layout.padding_mask()[: tensor.data.size]
    if not mask.any():
        return False
    tensor.data[mask] = int(params.get("value", 0xA5))
    return True


def _truncated(tensor: SimTensor, params: Mapping[str, Any], _: int) -> bool:
    size = tensor.data.size
    if size == 0:
        return False
    drop = min(int(params.get("drop", -(-size // 2))), size)
    tensor.data = tensor.data[: size - drop].copy()
    return True


def _garbage(tensor: SimTensor, params: Mapping[str, Any], index: int) -> bool:
    rng = np.random.default_rng([int(params.get("seed", 0)), index])
    tensor.data = rng.integers(0, 256, tensor.data.size, dtype=np.uint8)
    return True


def _unwritten(tensor: SimTensor, params: Mapping[str, Any], _: int) -> bool:
    size = tensor.data.size
    if size == 0:
        return False
    if "drop" in params:
        left = min(int(params["drop"]), size)
    else:
        # The fraction is of the bytes up to the last data byte, so it always reaches data (a
        # buffer's tail may be padding only); everything past that is left unwritten too.
        data = np.flatnonzero(~tensor.codec_layout.padding_mask()[:size])
        end = int(data[-1]) + 1 if data.size else size
        left = size - end + max(1, int(end * float(params.get("fraction", 0.25))))
    prior = tensor.prior if tensor.prior is not None else np.zeros(size, dtype=np.uint8)
    tensor.data[size - left :] = prior[size - left : size]
    return True


def apply_stale_output(
    faults: Iterable[Fault], model: str, outputs: list[SimTensor], memory: dict[Any, np.ndarray]
) -> None:
    """``stale-output``: every output (or the ``tensors`` named) gets the bytes of the model's
    previous run in ``memory`` (the simulated NPU's, kept per model and output), and this run's
    bytes are remembered for the next one. Without the fault nothing is remembered."""
    chosen = [f for f in faults if f.name == "stale-output"]
    if not chosen:
        return
    names = chosen[0].params.get("tensors")
    for tensor in outputs:
        key = (model, tensor.name)
        fresh = tensor.data.copy()
        previous = memory.get(key)
        wanted = names is None or tensor.name in names
        if wanted and previous is not None and previous.size == tensor.data.size:
            tensor.data[:] = previous
        memory[key] = fresh


def _accuracy_drift(tensor: SimTensor, params: Mapping[str, Any], index: int) -> bool:
    values = _values(tensor, "accuracy-drift")
    if values.size == 0:
        return False
    lsb = int(params.get("lsb", 1))
    fraction = float(params.get("fraction", 0.1))
    rng = np.random.default_rng([int(params.get("seed", 0)) & 0xFFFFFFFF, index])
    count = min(values.size, max(1, round(fraction * values.size)))
    chosen = rng.choice(values.size, size=count, replace=False)
    signs = rng.choice(np.array([-1, 1]), size=count)
    flat = values.reshape(-1)
    dtype = flat.dtype
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        low, high = float(info.min), float(info.max)
    else:
        limit = float(np.finfo(dtype).max)
        low, high = -limit, limit
    old = flat[chosen].astype(np.float64)
    moved = old + signs * lsb
    # at the edge of the range the element goes the other way, so it still moves by lsb
    outside = (moved < low) | (moved > high)
    moved[outside] = old[outside] - signs[outside] * lsb
    drifted = flat.copy()
    drifted[chosen] = np.clip(moved, low, high).astype(dtype)
    _write_data(tensor, drifted.reshape(values.shape))
    return True


_APPLY: dict[str, tuple[Callable[[SimTensor, Mapping[str, Any], int], bool], str]] = {
    "wrong-alignment": (_wrong_alignment, "a layout whose padding another alignment changes"),
    "swapped-channel-groups": (_swapped_channel_groups, "a channel axis with the groups named"),
    "byte-swap": (_byte_swap, "buffers of at least two bytes"),
    "dirty-padding": (_dirty_padding, "a layout with padding bytes"),
    "truncated-output": (_truncated, "a non-empty buffer"),
    "garbage": (_garbage, "a buffer"),
    "unwritten-output": (_unwritten, "a non-empty buffer"),
    "accuracy-drift": (_accuracy_drift, "a tensor with elements"),
}
"""Each buffer fault's function (False when the tensor has nothing it applies to) and what a
tensor needs for it to apply."""


# ------------------------------------------------------------------------- timing faults


def apply_timing_faults(faults: Iterable[Fault], seconds: float, index: int) -> float:
    """The run time of run ``index`` after the timing faults (only the time: no buffer)."""
    for fault in faults:
        if fault.name == "slow":
            seconds *= 1.0 + float(fault.params.get("percent", 20)) / 100.0
        elif fault.name == "noisy-latency":
            percent = float(fault.params.get("percent", 50)) / 100.0
            rng = np.random.default_rng([int(fault.params.get("seed", 0)) & 0xFFFFFFFF, index])
            seconds *= float(rng.uniform(max(1.0 - percent, NOISE_FLOOR), 1.0 + percent))
    return seconds


# ------------------------------------------------------------------------ process faults


def apply_process_faults(faults: Iterable[Fault]) -> None:
    """Hang or crash, as the first such fault in the list says."""
    for fault in faults:
        if fault.name == "hang":
            _hang(fault.params.get("seconds"))
        elif fault.name == "crash":
            _crash(fault.params)


def _hang(seconds: float | None) -> None:
    if seconds is not None:
        time.sleep(seconds)
        return
    while True:  # a wedged runtime call: only the agent's watchdog or a kill ends it
        time.sleep(60)


def _crash(params: Mapping[str, Any]) -> None:
    if "exit_code" in params:
        os._exit(int(params["exit_code"]))
    number = int(getattr(signal, str(params.get("signal", "SIGSEGV"))))
    os.kill(os.getpid(), number)
    time.sleep(1)  # the signal is delivered asynchronously; if it was caught, die anyway
    os._exit(128 + number)


# -------------------------------------------------------------------------- soak faults
# leak: the bytes are written (not a lazily mapped zero page), so they are resident: the agent's
# VmRSS grows by about kib per run. flaky-errors: run ``index`` fails when a draw from ``seed``
# and the index falls below ``rate``, so a ``rate`` share of runs fail, reproducibly.

_KEPT: list[bytes] = []
"""What ``leak`` has kept in this process: never released, on purpose."""


def apply_soak_faults(faults: Iterable[Fault], index: int) -> None:
    """Keep memory for ``leak``; raise the refusal of a failing ``flaky-errors`` run."""
    for fault in faults:
        if fault.name == "leak":
            _KEPT.append(b"\x5a" * (int(fault.params.get("kib", 64)) * 1024))
        elif fault.name == "flaky-errors":
            rate = float(fault.params.get("rate", 0.2))
            seed = int(fault.params.get("seed", 0)) & 0xFFFFFFFF
            draw = float(np.random.default_rng([seed, index]).random())
            if draw < rate:
                raise SimRefusal(
                    "DeviceError",
                    "run",
                    f"flaky-errors: run {index} failed (simulated intermittent runtime error, "
                    f"rate {rate:g})",
                )


# ------------------------------------------------------------------------ unaligned-width
# What the model reads of an input whose rows one API path places W elements apart while the
# layout places them a row stride apart. A layout pads its rows when the dims above the width's
# are further apart than a dense row; the "dense rows" view of it is the same dims with those
# strides packed tight, which is how a path that ignores the row stride lays out or reads the
# bytes. Layouts without row padding (NC1HWC2 planes, aligned widths) have no such view.


def dense_rows(layout: BlockedLayout) -> BlockedLayout | None:
    """``layout`` with its rows W elements apart, None when its rows are not padded."""
    if "w" not in layout.axis_names or layout.inserted_axes:
        return None
    width = [d for d in layout.dims if d.axis == layout.axis_names.index("w")]
    if len(width) != 1:
        return None  # a blocked width: no row of W elements to misplace
    row = width[0]
    running = row.stride * row.size
    dims = list(layout.dims)
    for i in sorted(range(len(dims)), key=lambda i: layout.dims[i].stride):
        if dims[i].stride > row.stride:
            dims[i] = dataclasses.replace(dims[i], stride=running)
            running *= dims[i].size
    if dims == list(layout.dims):
        return None
    return dataclasses.replace(layout, dims=tuple(dims))


def apply_unaligned_width(
    faults: Iterable[Fault], path: str, held: Sequence[HeldInput], target: str
) -> None:
    """Misread every padded input (or the ``tensors`` named) when this run's API path
    (``normal`` or ``zero-copy``) is the fault's: the model computes on what that path makes
    of the rows."""
    chosen = [f for f in faults if f.name == "unaligned-width"]
    if not chosen or chosen[0].params.get("path", "normal") != path:
        return
    names = chosen[0].params.get("tensors")
    quant = unit_for(target).quant
    changed = []
    for item in held:
        tensor = item.tensor
        if names is not None and tensor.name not in names:
            continue
        layout = tensor.codec_layout
        tight = dense_rows(layout)
        if tight is None or quant is None:
            continue
        if path == "normal":
            # The runtime converted the logical input writing rows W apart; the NPU reads the
            # buffer with the row stride.
            values = layout.unpack(tensor.data)
            misread = layout.unpack(np.resize(tight.pack(values), layout.nbytes))
        else:
            misread = tight.unpack(tensor.data)
        item.model_value = quant.model_input(dict(tensor.attributes), misread)
        changed.append(tensor.name)
    if not changed:
        raise SimConfigError(
            f"fault unaligned-width ({path} path) applies to no input of this run: it needs an "
            "input whose layout pads its rows (a width that is not a multiple of the row "
            "alignment)"
        )


# ---------------------------------------------------------------------------- log faults
# A simulated board's own logs (docs/runtime/agent.md, "Faults"): the lines a real board logs
# (npu_hil.targets.log_signatures.fault_lines), kernel records appended to the board's fake kmsg
# (NPU_HIL_KMSG, never the real /dev/kmsg), runtime lines on stderr; at NPU_HIL_SIM_LOG_LEVEL 3
# or more its loads and runs too.

SIM_LOG_LEVEL_ENV = "NPU_HIL_SIM_LOG_LEVEL"
INFO_LEVEL = 3
STAGE = {"npu-timeout": "run", "oom-kill": "run", "bad-model-version": "load"}
FAILURE = {
    "npu-timeout": "the NPU job did not complete before the driver's timeout",
    "oom-kill": "out of memory: the runtime's buffers could not be allocated",
    "bad-model-version": "the runtime refused the model: its version is not one this runtime reads",
}
KERNEL_PRI = 3  # LOG_ERR, facility kernel


def runtime_info(message: str) -> None:
    """An informational runtime line, written only at the info level or above."""
    try:
        level = int(os.environ.get(SIM_LOG_LEVEL_ENV) or "0")
    except ValueError:
        level = 0
    if level >= INFO_LEVEL:
        _stderr([f"I sim: {message}"])


def apply_log_fault(faults: Iterable[Fault], target: str, stage: str) -> None:
    """The first log fault of ``faults`` for ``stage`` (``load`` or ``run``): its lines logged,
    then the stage fails as the runtime's DeviceError."""
    for fault in faults:
        name = fault.name
        if STAGE.get(name) != stage:
            continue
        lines = fault_lines(target, name)
        if not lines["kernel"] and not lines["runtime"]:
            raise SimConfigError(
                f"fault {name}: no log signature of {target}'s tables names it, so a board of "
                f"{target} has nothing to log for it"
            )
        if lines["kernel"]:
            append_kernel(lines["kernel"])
        if lines["runtime"]:
            _stderr(lines["runtime"])
        raise SimRefusal("DeviceError", stage, FAILURE[name])


def append_kernel(messages: list[str]) -> None:
    """Append kernel records to the simulated board's kernel log."""
    path = kmsg_path()
    if os.path.realpath(path) == REAL_KMSG:
        raise SimConfigError(
            f"a log fault writes the simulated board's kernel log, and {path} is this machine's: "
            f"set NPU_HIL_KMSG to the board's own file"
        )
    seq = _next_seq(path)
    usec = int(time.monotonic() * 1e6)
    records = "".join(
        f"{KERNEL_PRI},{seq + i},{usec + i},-;{message}\n" for i, message in enumerate(messages)
    )
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(records)


def _next_seq(path: str) -> int:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 4096))
            tail = handle.read().decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return 0
    for line in reversed(tail):
        record = parse_record(line)
        if record is not None:
            return int(record["seq"]) + 1
    return 0


def _stderr(lines: list[str]) -> None:
    os.write(2, "".join(f"{line}\n" for line in lines).encode("utf-8"))
