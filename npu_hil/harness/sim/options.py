"""The simulated board's options (the job's ``adapter_options`` for the ``sim`` adapter), and
which vendor's runtime each target it can be behaves like (the vendor units' registry)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from npu_hil.harness.sim.execute import EXECUTORS
from npu_hil.harness.sim.faults import Fault, parse_faults
from npu_hil.harness.simkit.base import RuntimeOptions
from npu_hil.harness.simkit.errors import SimConfigError
from npu_hil.targets.registry import all_targets, unit_for
from npu_hil.targets.unit import Vendor


def _simulated() -> tuple[str, ...]:
    return tuple(t for t in all_targets() if unit_for(t).simulator)


SIM_TARGETS = _simulated()
"""Every target a simulated board can be (the built-in ones; a unit registered later is
simulated too, see :func:`unit_of`)."""


def unit_of(target: str) -> Vendor:
    """The vendor unit of a target a simulated board can be."""
    if isinstance(target, str) and target in _simulated():
        return unit_for(target)
    raise SimConfigError(
        f"unknown target {target!r}; a simulated board can be: {', '.join(_simulated())}"
    )


def vendor_of(target: str) -> str:
    return unit_of(target).name


OPTION_HELP = {
    "target": "the board to be: any target of a vendor unit (npu-hil targets list)",
    "faults": "faults to inject: names or {name, ...params} (see npu_hil.harness.sim.faults)",
    "executor": "auto | onnxruntime | numpy",
    "numerics": "auto (as the target's NPU computes: int8 or float16 through the whole graph, "
    "calibrated on each run's inputs) | float (the float graph, only inputs and outputs "
    "quantized) | vendor (the vendor's own simulator, where its compiler is installed: a "
    "reference; the byte diff then differs from the host's expectation)",
    "buffer_offset": "bytes past a 32-byte boundary for every I/O buffer (a runtime that checks "
    "addresses refuses)",
    "buffer_offsets": "the same per tensor name",
    "input_layout": "native input layout for inputs that do not name one",
    "output_layout": "native output layout (the vendor's default otherwise)",
    "runtime_versions": "versions the simulated runtime reports as a real one's (field → "
    "version, e.g. api_version: 1.6.0), held to the vendor's compatibility table",
    "api_path": "the vendor API path to run through: an adapter its unit lists (npu-hil's "
    "cross-API check); the first, zero-copy, by default",
}
"""The common options; each vendor unit adds its own (``Vendor.sim_options``)."""
COMMON = tuple(OPTION_HELP)
NUMERICS_CHOICES = ("auto", "float", "vendor")


@dataclass(frozen=True)
class SimOptions(RuntimeOptions):
    """The options of a simulated board, checked (:meth:`from_mapping`)."""

    faults: tuple[Fault, ...] = ()
    runtime_versions: Mapping[str, str] = field(default_factory=dict)
    """Versions reported as a real runtime's (a runtime matrix of simulated boards)."""

    @property
    def vendor(self) -> str:
        return vendor_of(self.target)

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> SimOptions:
        """Check ``options`` (unknown keys are refused, naming the ones this target takes)."""
        if not isinstance(options, Mapping):
            raise SimConfigError(f"sim options must be a mapping, got {options!r}")
        if "target" not in options:
            raise SimConfigError("sim options: 'target' is required (the board to simulate)")
        target = options["target"]
        own = unit_of(target).sim_options
        accepted = (*COMMON, *own)
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            helps = {**OPTION_HELP, **{k: o.help for k, o in own.items()}}
            listed = "; ".join(f"{k}: {helps[k]}" for k in accepted)
            raise SimConfigError(
                f"sim options for {target}: unknown option(s) {', '.join(unknown)}; "
                f"accepted: {listed}"
            )
        executor = _choice("executor", options.get("executor", "auto"), EXECUTORS)
        numerics = _choice("numerics", options.get("numerics", "auto"), NUMERICS_CHOICES)
        offsets = options.get("buffer_offsets") or {}
        if not isinstance(offsets, Mapping):
            raise SimConfigError(f"buffer_offsets must map tensor names to bytes, got {offsets!r}")
        return cls(
            target=target,
            faults=parse_faults(options.get("faults")),
            runtime_versions=_versions(options.get("runtime_versions")),
            executor=executor,
            numerics=numerics,
            buffer_offset=_offset("buffer_offset", options.get("buffer_offset", 0)),
            buffer_offsets={str(k): _offset(f"buffer_offsets.{k}", v) for k, v in offsets.items()},
            input_layout=_text("input_layout", options.get("input_layout")),
            output_layout=_text("output_layout", options.get("output_layout")),
            api_path=_api_path(target, options.get("api_path")),
            vendor_options={
                k: _choice(k, options[k], o.choices)
                for k, o in own.items()
                if options.get(k) is not None
            },
        )


def _versions(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and k and isinstance(v, str) and v for k, v in value.items()
    ):
        raise SimConfigError(
            f"runtime_versions must map field names to version text, got {value!r}"
        )
    return dict(value)


def _api_path(target: str, value: Any) -> str | None:
    """One of the vendor unit's API paths (by adapter name), or None for the first."""
    if value is None:
        return None
    paths = [p.adapter for p in unit_of(target).api_paths]
    if value not in paths:
        listed = ", ".join(paths) or "none"
        raise SimConfigError(
            f"api_path for {target} must be one of its vendor's API paths ({listed}), got {value!r}"
        )
    return None if value == paths[0] else str(value)


def _offset(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 4096:
        raise SimConfigError(f"{key} must be a number of bytes in [0, 4096), got {value!r}")
    return value


def _text(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise SimConfigError(f"{key} must be a layout name, got {value!r}")
    return value


def _choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise SimConfigError(f"{key} must be one of {', '.join(choices)}, got {value!r}")
    return str(value)
