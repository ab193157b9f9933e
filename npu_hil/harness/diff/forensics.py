"""Layout forensics: which known layout and parameters reproduce a device buffer (each candidate
one pack and one vectorised compare; the variants tried: docs/runtime/diff.md).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from typing_extensions import TypedDict

from npu_hil.harness.codec import get_layout, layout_names
from npu_hil.harness.codec.buffers import as_bytes
from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.registry import unit_for

MATCH_THRESHOLD = 0.999
"""A candidate that reproduces at least this fraction of the bytes counts as a match."""


@dataclass(frozen=True)
class Candidate:
    """A layout and parameters, and how much of the device buffer they reproduce."""

    layout: str
    role: str
    params: dict[str, Any]
    swapped: bool
    nbytes: int
    matching: float
    exact: bool
    note: str = ""

    def describe(self) -> str:
        text = _with_params(self.layout, self.params)
        if self.swapped:
            text += " with its L/H bytes swapped"
        return text + (f" [{self.note}]" if self.note else "")


class CandidateDocument(TypedDict):
    """One :class:`Candidate` in an :class:`ExplanationDocument`."""

    layout: str
    role: str
    params: dict[str, object]
    swapped: bool
    nbytes: int
    matching: float
    exact: bool
    note: str


class ExplanationDocument(TypedDict):
    """:meth:`Explanation.to_dict`: the forensics' answer as ``npu-hil explain --json`` and the
    diff's report hold it."""

    target: str
    declared: str | None
    found: bool
    declared_fault: str | None
    verdict: str
    candidates: list[CandidateDocument]


@dataclass
class Explanation:
    """The ranked candidates and a one-line verdict."""

    target: str
    declared: str | None
    candidates: list[Candidate] = field(default_factory=list)
    declared_fault: str | None = None
    """What is wrong with the declared layout's buffer when it explains the device's: cut short,
    or two channel groups swapped. It takes precedence over other layouts' partial matches."""

    @property
    def best(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None

    @property
    def found(self) -> bool:
        return self.best is not None and self.best.matching >= MATCH_THRESHOLD

    def verdict(self) -> str:
        best = self.best
        if self.declared_fault and not (best is not None and best.exact):
            return f"the device buffer is the declared {self.declared} {self.declared_fault}"
        if best is None or not self.found:
            return f"no known {self.target} layout reproduces the device buffer"
        sentence = f"the device buffer is {best.describe()}"
        if self.declared and self.declared != best.describe():
            sentence += f"; the model declares {self.declared}"
        return sentence

    def to_dict(self) -> ExplanationDocument:
        return {
            "target": self.target,
            "declared": self.declared,
            "found": self.found,
            "declared_fault": self.declared_fault,
            "verdict": self.verdict(),
            "candidates": [cast(CandidateDocument, dataclasses.asdict(c)) for c in self.candidates],
        }


def explain(
    device_buffer: Any,
    tensor: np.ndarray,
    target: str,
    *,
    role: str | None = None,
    declared: BlockedLayout | None = None,
    limit: int = 5,
    check_declared: bool = True,
) -> Explanation:
    """Rank the target's layouts by how much of ``device_buffer`` they reproduce from ``tensor``.

    ``role`` limits the search to that role's layouts (both when None). ``declared`` is the
    layout the model says it uses; the verdict names it when the buffer is something else, and
    says so when the buffer is the declared one cut short or with channel groups swapped
    (``check_declared``; the diff, which finds those itself, turns it off).
    """
    device = as_bytes(device_buffer, "device")
    tensor = np.asarray(tensor)
    seen: set[tuple[str, str, int, bool, bytes]] = set()
    candidates: list[Candidate] = []
    for layout, note in _candidate_layouts(target, tensor, role):
        for swapped in (False, True) if layout.encoding.nparts == 2 else (False,):
            variant = _swapped(layout) if swapped else layout
            packed = variant.pack(tensor)
            key = (layout.name, layout.role, layout.nbytes, swapped, _digest(packed))
            if key in seen:
                continue
            seen.add(key)
            candidates.append(_score(variant, packed, device, swapped, note))
    candidates.sort(key=lambda c: (not c.exact, -c.matching, c.swapped, len(c.params)))
    return Explanation(
        target=target,
        declared=None if declared is None else _with_params(declared.name, declared.params),
        candidates=candidates[:limit],
        declared_fault=_declared_fault(declared, tensor, device) if check_declared else None,
    )


def _declared_fault(
    declared: BlockedLayout | None, tensor: np.ndarray, device: np.ndarray
) -> str | None:
    """A truncation (the device buffer is an exact prefix of the declared packing) or a channel
    group swap the diff names: a buffer cut short looks like a smaller layout and swapped groups
    like another blocking, so neither is blamed on another layout."""
    if declared is None:
        return None
    from npu_hil.harness.diff.buffers import diff_buffers

    packed = declared.pack(tensor)
    if 0 < device.size < packed.size and np.array_equal(packed[: device.size], device):
        return f"cut short: {device.size} of its {packed.size} bytes"
    try:
        report = diff_buffers(declared, tensor, device)
    except LayoutError:
        return None
    for finding in report.findings:
        if finding.kind in ("channel-groups-swapped", "channels-swapped"):
            return "with " + finding.message.split(" (")[0].replace(" are swapped", " swapped")
    return None


def _with_params(name: str, params: Mapping[str, object]) -> str:
    listed = ", ".join(f"{k}={v}" for k, v in params.items())
    return name + (f" ({listed})" if listed else "")


def _score(
    layout: BlockedLayout, packed: np.ndarray, device: np.ndarray, swapped: bool, note: str
) -> Candidate:
    common = min(packed.size, device.size)
    equal = int(np.count_nonzero(packed[:common] == device[:common]))
    longest = max(packed.size, device.size, 1)
    return Candidate(
        layout=layout.name,
        role=layout.role,
        params=dict(layout.params),
        swapped=swapped,
        nbytes=layout.nbytes,
        matching=equal / longest,
        exact=packed.size == device.size and equal == common,
        note=note,
    )


def _digest(packed: np.ndarray) -> bytes:
    """Two candidates that pack the tensor identically are one candidate."""
    return hashlib.blake2b(packed.tobytes(), digest_size=16).digest()


def _swapped(layout: BlockedLayout) -> BlockedLayout:
    return dataclasses.replace(layout, encoding=dataclasses.replace(layout.encoding, swapped=True))


def _candidate_layouts(
    target: str, tensor: np.ndarray, role: str | None
) -> Iterator[tuple[BlockedLayout, str]]:
    shape, dtype = tensor.shape, tensor.dtype
    roles = (role,) if role else ("output", "input")
    for each_role in roles:
        for name in layout_names(target):
            for params, note in _param_variants(target, name, each_role, shape, dtype):
                try:
                    yield get_layout(target, name, shape, dtype, role=each_role, **params), note
                except LayoutError:
                    continue


def _param_variants(
    target: str, name: str, role: str, shape: tuple[int, ...], dtype: np.dtype
) -> Iterator[tuple[Mapping[str, object], str]]:
    # Each vendor's layout parameters, checked by the layout builder get_layout calls.
    yield {}, ""
    variants = unit_for(target).forensic_variants
    if variants is not None:
        yield from variants(name, role, shape, dtype)
