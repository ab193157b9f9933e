"""What a buffer diff found: plain data, a JSON form and a few human lines."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import cast

import numpy as np
from typing_extensions import TypedDict

from npu_hil.harness.codec.engine import index_text

VERDICT_EQUAL = "equal"
VERDICT_WITHIN = "equal within tolerance"
VERDICT_DIFFERENT = "different"
VERDICT_UNWRITTEN = "unwritten"
"""Bytes of the device buffer still hold the canary the agent filled it with where the expected
buffer holds something else: the device never wrote them. Takes precedence over "different"."""
VERDICT_STALE = "stale"
"""An output that did not change between two runs on different inputs (the stale-result check)
although the host's expectation did: set on a run's tensor, never by the byte diff alone."""
VERDICT_CROSS_API = "cross-api"
"""An output two of the vendor's API paths (zero-copy and the normal API) disagree on: its
values or the attributes both report (the cross-API check,
``npu_hil.harness.pipeline.crossapi``)."""
PASSING_VERDICTS = frozenset((VERDICT_EQUAL, VERDICT_WITHIN))


@dataclass(frozen=True)
class Mismatch:
    """One element whose decoded value differs from the expected one beyond the tolerance.

    ``offset`` is the first byte of the element that differs; ``part``, ``entry`` and ``bits``
    describe that byte (L/H part of a 16-bit value, 16-byte entry and its bit range on KL730).
    """

    offset: int
    index: tuple[int, ...]
    part: str | None
    entry: int | None
    bits: str | None
    expected: float
    got: float

    def describe(self, axis_names: tuple[str, ...]) -> str:
        where = index_text(axis_names, self.index)
        byte = f"offset {self.offset}"
        if self.entry is not None:
            byte += f" (entry {self.entry} bits {self.bits})"
        part = f" {self.part} byte" if self.part else ""
        return f"{where}: expected {_num(self.expected)}, got {_num(self.got)} at {byte}{part}"


@dataclass(frozen=True)
class Unwritten:
    """A run of device bytes that still hold the canary where the expected buffer differs from
    it: ``offset`` of its first such byte, ``count`` bytes to its last (one stretch of the
    pattern; a byte inside whose expected value equals the pattern does not split it),
    ``index`` the logical index of the element the first byte belongs to (None for padding)."""

    offset: int
    count: int
    index: tuple[int, ...] | None
    padding: bool

    def describe(self, axis_names: tuple[str, ...]) -> str:
        where = "padding" if self.index is None else index_text(axis_names, self.index)
        return f"{self.count} bytes unwritten from offset {self.offset} ({where})"


@dataclass(frozen=True)
class Finding:
    """A named fault the diff recognised, e.g. ``dirty-padding`` or ``channel-groups-swapped``."""

    kind: str
    message: str


class MismatchDocument(TypedDict):
    """One :class:`Mismatch` in a :class:`DiffDocument`."""

    offset: int
    index: tuple[int, ...]
    part: str | None
    entry: int | None
    bits: str | None
    expected: float
    got: float


class UnwrittenDocument(TypedDict):
    """One :class:`Unwritten` stretch in a :class:`DiffDocument`."""

    offset: int
    count: int
    index: tuple[int, ...] | None
    padding: bool


class FindingDocument(TypedDict):
    """One :class:`Finding` in a :class:`DiffDocument`."""

    kind: str
    message: str


class DiffDocument(TypedDict):
    """:meth:`DiffReport.to_dict`: a tensor's byte diff as results and ``npu-hil diff --json``
    hold it (the report's fields but its arrays, channels and groups keyed by their text)."""

    target: str
    layout: str
    role: str
    shape: list[int]
    dtype: str
    axis_names: tuple[str, ...]
    tolerance: float
    padding_policy: str
    expected_nbytes: int
    device_nbytes: int
    elements_total: int
    elements_compared: int
    elements_missing: int
    dirty_padding_bytes: int
    first_dirty_padding: list[int]
    group_size: int | None
    mismatched: int
    within_tolerance: int
    max_abs_error: float
    first_mismatches: list[MismatchDocument]
    per_channel: dict[str, int]
    per_group: dict[str, int]
    findings: list[FindingDocument]
    unwritten_bytes: int
    unwritten_elements: int
    first_unwritten: list[UnwrittenDocument]
    canary: str | None
    canary_note: str
    verdict: str
    length_delta: int


@dataclass
class DiffReport:
    """The outcome of :func:`npu_hil.harness.diff.diff_buffers`."""

    target: str
    layout: str
    role: str
    shape: tuple[int, ...]
    dtype: str
    axis_names: tuple[str, ...]
    tolerance: float
    padding_policy: str
    expected_nbytes: int
    device_nbytes: int
    elements_total: int
    elements_compared: int
    elements_missing: int
    dirty_padding_bytes: int
    first_dirty_padding: list[int]
    group_size: int | None
    mismatched: int = 0
    within_tolerance: int = 0
    max_abs_error: float = 0.0
    first_mismatches: list[Mismatch] = field(default_factory=list)
    per_channel: dict[int, int] = field(default_factory=dict)
    per_group: dict[int, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    unwritten_bytes: int = 0
    """Device bytes that still hold the canary where the expected buffer differs from it."""
    unwritten_elements: int = 0
    """Logical elements with at least one unwritten byte."""
    first_unwritten: list[Unwritten] = field(default_factory=list)
    canary: str | None = None
    """The canary (hex) the device buffer started filled with; None: not filled, not checked."""
    mismatch_index: np.ndarray | None = field(default=None, repr=False, compare=False)
    mismatch_expected: np.ndarray | None = field(default=None, repr=False, compare=False)
    mismatch_got: np.ndarray | None = field(default=None, repr=False, compare=False)
    dirty_padding_offsets: np.ndarray | None = field(default=None, repr=False, compare=False)
    unwritten_offsets: np.ndarray | None = field(default=None, repr=False, compare=False)
    expected_buffer: np.ndarray | None = field(default=None, repr=False, compare=False)
    """The bytes the device buffer had to hold (the stale-result check compares two runs')."""
    canary_note: str = ""
    """Why the buffer was not checked for unwritten bytes when a canary was asked for."""

    @property
    def length_delta(self) -> int:
        """Device bytes minus expected bytes: negative when the device buffer is short."""
        return self.device_nbytes - self.expected_nbytes

    @property
    def ok(self) -> bool:
        return self.verdict in PASSING_VERDICTS

    @property
    def verdict(self) -> str:
        if self.unwritten_bytes:
            return VERDICT_UNWRITTEN
        if self.mismatched or self.dirty_padding_bytes or self.length_delta:
            return VERDICT_DIFFERENT
        return VERDICT_WITHIN if self.within_tolerance else VERDICT_EQUAL

    def summary(self, lines: int = 5) -> str:
        """A few human lines: the verdict, the counts, the first mismatches, the findings."""
        head = (
            f"{self.target} {self.layout} ({self.role}) {list(self.shape)} {self.dtype}: "
            f"{self.verdict}"
        )
        out = [head]
        if self.length_delta:
            how = "short" if self.length_delta < 0 else "long"
            out.append(
                f"  device buffer is {abs(self.length_delta)} bytes {how} "
                f"({self.device_nbytes} vs {self.expected_nbytes})"
            )
        out.append(
            f"  {self.mismatched} of {self.elements_compared} elements differ"
            + (f" beyond ±{_num(self.tolerance)}" if self.tolerance else "")
            + (f", max abs error {_num(self.max_abs_error)}" if self.mismatched else "")
            + (f", {self.elements_missing} missing" if self.elements_missing else "")
            + (
                f"; {self.dirty_padding_bytes} dirty padding bytes"
                if self.dirty_padding_bytes
                else ""
            )
        )
        if self.unwritten_bytes:
            out.append(
                f"  {self.unwritten_bytes} bytes unwritten (still the canary {self.canary}), "
                f"{self.unwritten_elements} elements"
            )
            out += [f"  {run.describe(self.axis_names)}" for run in self.first_unwritten[:lines]]
        out += [f"  {found.describe(self.axis_names)}" for found in self.first_mismatches[:lines]]
        if self.dirty_padding_bytes and self.first_dirty_padding:
            first = ", ".join(str(o) for o in self.first_dirty_padding[:lines])
            out.append(f"  dirty padding at offsets {first}")
        out += [f"  {finding.kind}: {finding.message}" for finding in self.findings]
        if self.canary_note:
            out.append(f"  canary: {self.canary_note}")
        return "\n".join(out)

    def to_dict(self) -> DiffDocument:
        data = asdict(self)
        for array_field in fields(self):  # the arrays (repr=False) stay out of the document
            if not array_field.repr:
                data.pop(array_field.name)
        data["shape"] = list(self.shape)
        data["verdict"] = self.verdict
        data["length_delta"] = self.length_delta
        data["per_channel"] = {str(k): v for k, v in self.per_channel.items()}
        data["per_group"] = {str(k): v for k, v in self.per_group.items()}
        return cast(DiffDocument, data)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
