"""The cross-API check: the same job through two of the vendor's API paths, every output compared
as a tensor, values and attributes, both sides decoded first (docs/model-developer/failures.md).
The two paths share the model and the NPU but not the code around them; the vendors' trackers
show them disagreeing on unaligned widths, each plausible on its own."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npu_hil.harness.agent.protocol import Result, TensorRecord
from npu_hil.harness.farm.decode import dequantize
from npu_hil.harness.farm.session import BoardSession
from npu_hil.harness.pipeline.result import ModelRun, TensorRun
from npu_hil.targets.registry import unit_for
from npu_hil.targets.unit import ApiPath, PathTensor

__all__ = ["CrossApi", "judge_cross_api", "other_path"]

SIM_ADAPTER = "sim"
FLOAT_ULPS = 4
"""Float32 rounding units allowed between the paths' floats: the normal API dequantizes on the
board, the host in float64 (one rounding each way, and a scale stored as float32)."""


@dataclass(frozen=True)
class CrossApi:
    """The check of one run: the two paths (this run's first), and a note instead when the
    check does not apply; ``findings`` are the run-level disagreements (an output one path did
    not return)."""

    paths: tuple[str, ...] = ()
    apis: tuple[str, ...] = ()
    note: str = ""
    findings: tuple[str, ...] = ()
    other_adapter: str = ""
    other_versions: Mapping[str, Any] = field(default_factory=dict)

    @property
    def applicable(self) -> bool:
        return not self.note

    def summary(self) -> str:
        if not self.applicable:
            return f"cross-API check: {self.note}"
        a, b = self.apis or self.paths
        return f"cross-API check: {a} vs {b}: " + (
            "disagree" if self.findings else "compared output by output"
        )


def label(path: ApiPath, simulated: bool) -> str:
    """``rknn_native (zero-copy)``: the adapter and the first words of the vendor's name for
    the path (the whole name is in :meth:`CrossApi.summary`)."""
    where = ", simulated" if simulated else ""
    return f"{path.adapter} ({path.api.split(' (')[0]}{where})"


Paths = tuple[BoardSession | None, ApiPath | None, ApiPath | None, CrossApi]


def other_path(session: BoardSession) -> Paths:
    """The session that runs the job through the vendor's other API path, the board's own path,
    the other, and the check's labels; (None, None, None, a note) when the check does not
    apply."""
    paths = unit_for(session.target).api_paths
    names = ", ".join(p.adapter for p in paths)
    if len(paths) < 2:
        note = f"not applicable (one API path: {names or 'none named'})"
        return None, None, None, CrossApi(note=note)
    if session.adapter == SIM_ADAPTER:
        # The simulated runtime is the first (zero-copy) path unless told otherwise.
        given = session.adapter_options.get("api_path") or paths[0].adapter
        mine = next((p for p in paths if p.adapter == given), paths[0])
        other = next(p for p in paths if p is not mine)
        options = {**session.adapter_options, "api_path": other.adapter}
        replaced = dataclasses.replace(session, adapter_options=options)
    else:
        found = [p for p in paths if p.adapter == session.adapter]
        if not found:
            note = (
                f"not applicable (the board's adapter {session.adapter} is none of the "
                f"vendor's API paths: {names})"
            )
            return None, None, None, CrossApi(note=note)
        mine = found[0]
        other = next(p for p in paths if p is not mine)
        replaced = dataclasses.replace(session, adapter=other.adapter)
    simulated = session.simulated
    check = CrossApi(
        paths=(label(mine, simulated), label(other, simulated)),
        apis=(f"{mine.adapter}: {mine.api}", f"{other.adapter}: {other.api}"),
        other_adapter=other.adapter,
    )
    return replaced, mine, other, check


def judge_cross_api(
    first: ModelRun,
    second: Result,
    path: ApiPath,
    check: CrossApi,
    *,
    tolerance: float,
    mine: ApiPath | None,
) -> ModelRun:
    """``first`` with each output the other path's result disagrees on (``cross_api``) or
    could not be compared on (``cross_api_note``), and the check as :attr:`ModelRun.cross_api`."""
    theirs = {t.name: t for t in second.outputs}
    outputs = tuple(
        _judge(t, theirs.get(t.name), path, mine, check, tolerance) for t in first.outputs
    )
    extra = sorted(set(theirs) - {t.name for t in first.outputs})
    findings = tuple(
        f"output {name!r} came back only from {check.paths[1]}, not from {check.paths[0]}"
        for name in extra
    )
    done = dataclasses.replace(check, findings=findings, other_versions=dict(second.versions))
    return dataclasses.replace(first, outputs=outputs, cross_api=done)


def _judge(
    tensor: TensorRun,
    record: TensorRecord | None,
    path: ApiPath,
    mine: ApiPath | None,
    check: CrossApi,
    tolerance: float,
) -> TensorRun:
    a, b = check.paths
    if record is None:
        return dataclasses.replace(tensor, cross_api=f"{b} did not return output {tensor.name!r}")
    shape = tuple(int(d) for d in tensor.layout.shape)
    if path.read is None:
        return dataclasses.replace(tensor, cross_api_note=f"{b}: its vendor unit cannot read it")
    other = path.read(tensor.name, record.data, dict(record.attributes), shape)
    problems = _attribute_findings(tensor, mine, other, a, b)
    if other.values is None:
        note = f"values not compared: {b}: {other.note}"
        if problems:
            return dataclasses.replace(tensor, cross_api="; ".join(problems), cross_api_note=note)
        return dataclasses.replace(tensor, cross_api_note=note)
    try:
        ours = np.asarray(tensor.layout.unpack(tensor.data))
    except Exception as exc:  # a buffer the byte diff already failed (wrong length)
        return dataclasses.replace(
            tensor, cross_api_note=f"values not compared: {a}'s buffer cannot be read: {exc}"
        )
    first = _first_difference(tensor, ours, other.values, tolerance, a, b)
    if first:
        problems.insert(0, first)
    return dataclasses.replace(tensor, cross_api="; ".join(problems))


def _attribute_findings(
    tensor: TensorRun, mine: ApiPath | None, other: PathTensor, a: str, b: str
) -> list[str]:
    """The attributes both paths report of the tensor, where they differ."""
    ours: dict[str, Any] = {"shape": [int(d) for d in tensor.layout.shape]}
    if mine is not None and mine.attributes is not None:
        ours.update(mine.attributes(dict(tensor.reported)))
    found = []
    for key in sorted(set(ours) & set(other.attributes)):
        if not _same(ours[key], other.attributes[key]):
            theirs = _text(other.attributes[key])
            found.append(f"attribute {key}: {a} reports {_text(ours[key])}, {b} {theirs}")
    return found


def _same(x: Any, y: Any) -> bool:
    if isinstance(x, str) or isinstance(y, str):
        return str(x).upper() == str(y).upper()
    try:
        ax, ay = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        return bool(x == y)
    if ax.size == 1 and ay.size == 1:
        ax, ay = ax.reshape(1), ay.reshape(1)  # a scale given as one number or a list of one
    return ax.shape == ay.shape and bool(np.allclose(ax, ay, rtol=1e-6, atol=0.0))


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)) and len(value) > 8:
        return f"[{', '.join(map(str, value[:8]))}, …] ({len(value)} values)"
    return str(list(value) if isinstance(value, tuple) else value)


def _first_difference(
    tensor: TensorRun, ours: np.ndarray, theirs: np.ndarray, tolerance: float, a: str, b: str
) -> str:
    """The values' disagreement (how many elements, the first with both values), or ""."""
    name = tensor.name
    if ours.shape != theirs.shape:
        return f"output {name!r}: {a} gives shape {list(ours.shape)}, {b} {list(theirs.shape)}"
    if ours.dtype.kind in "iub" and theirs.dtype.kind in "iub":
        x, y = ours.astype(np.int64), theirs.astype(np.int64)
        bad = np.abs(x - y) > int(tolerance)
        how = "compared exactly: integers" if not tolerance else f"within {tolerance:g} units"
    else:
        x = _floats(ours, tensor.reported, f"{a} output {name!r}")
        y = _floats(theirs, tensor.reported, f"{b} output {name!r}")
        step = _step(tensor.reported, ours)
        allowed = tolerance * step + FLOAT_ULPS * np.finfo(np.float32).eps * np.maximum(
            np.abs(x), np.abs(y)
        )
        bad = ~(np.abs(x - y) <= allowed)  # NaN on one side only is a difference
        bad &= ~(np.isnan(x) & np.isnan(y))
        how = f"within {tolerance:g} quantization steps" if tolerance else "compared as floats"
    count = int(np.count_nonzero(bad))
    if not count:
        return ""
    flat = int(np.flatnonzero(bad.reshape(-1))[0])
    index = [int(i) for i in np.unravel_index(flat, ours.shape)]
    return (
        f"output {name!r}: {a} and {b} disagree ({how}) on {count} of {ours.size} elements, "
        f"the first at {index} (flat {flat}): {a} {_value(x, flat)}, {b} {_value(y, flat)}"
    )


def _floats(values: np.ndarray, reported: Mapping[str, Any], what: str) -> np.ndarray:
    if values.dtype.kind == "f":
        return values.astype(np.float64)
    return np.asarray(dequantize(values, reported, what), dtype=np.float64)


def _step(reported: Mapping[str, Any], stored: np.ndarray) -> float:
    """One quantization step of the native output (its largest scale), 1.0 for a float one."""
    value = reported.get("scale")
    if stored.dtype.kind == "f" or value is None:
        return 1.0
    scales = np.abs(np.asarray(value, dtype=np.float64)).reshape(-1)
    return float(scales.max()) if scales.size else 1.0


def _value(values: np.ndarray, flat: int) -> str:
    v = values.reshape(-1)[flat]
    return str(int(v)) if values.dtype.kind in "iu" else f"{float(v):.6g}"
