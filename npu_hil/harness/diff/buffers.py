"""Diff a device buffer against what the codec says it must be, and say where it differs.

The work is proportional to the bytes compared plus the bytes that differ: the buffers are
compared byte for byte first (one vectorised pass, the whole cost when they are equal); only the
offsets that differ are located (closed form, vectorised) and only the elements they touch are
decoded, so a 100 MB buffer with a few differences costs little more than ``numpy.array_equal``.

Then the fault behind a diff is named (:func:`diagnose`): cheap tests on the mismatched elements
(off by one, bit flips, L/H bytes or channel groups swapped), on the buffer (bytes swapped in
pairs), and layout forensics when most of the tensor is wrong or the length is off.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from npu_hil.harness.codec.buffers import as_bytes
from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.diff.report import DiffReport, Finding, Mismatch, Unwritten
from npu_hil.harness.errors import LayoutError

PADDING_POLICIES = ("zero", "ignore", "exact")
FIRST_MISMATCHES = 100


def diff_buffers(
    layout: BlockedLayout,
    expected: Any,
    device: Any,
    *,
    tolerance: float = 0,
    padding: str = "zero",
    first: int = FIRST_MISMATCHES,
    canary: bytes | None = None,
) -> DiffReport:
    """Compare ``device`` (the raw buffer) with ``expected`` under ``layout``.

    ``expected`` is the logical tensor (packed here, padding zero) or the packed bytes.
    Valid data is compared per decoded element, within ``±tolerance`` in the layout's value
    units (quantized units for integer data). ``padding``: ``"zero"`` — every padding byte of the
    device buffer must be zero; ``"exact"`` — padding must equal the expected buffer's;
    ``"ignore"`` — padding is not looked at. Dirty padding is its own finding, never a value
    mismatch. A device buffer of the wrong length is reported short or long; the common prefix is
    still compared.

    ``canary``: the pattern the device buffer was filled with before the run (repeated from its
    first byte). A differing byte that still holds it, within a stretch of at least the
    pattern's length that does, is *unwritten* — the device never wrote it — and is reported as
    such (located: offset, count, logical index), not as a value mismatch or dirty padding.
    Only differing bytes count, so a byte whose expected value happens to equal the pattern is
    never flagged, and a lone byte that happens to equal it stays a plain mismatch.
    """
    if padding not in PADDING_POLICIES:
        raise LayoutError(f"padding must be one of {PADDING_POLICIES}, got {padding!r}")
    if tolerance < 0:
        raise LayoutError(f"tolerance must be >= 0, got {tolerance}")
    expected_buf, expected_is_tensor = _expected_bytes(layout, expected)
    device_buf = as_bytes(device, "device")
    common = min(device_buf.size, layout.nbytes)

    if device_buf.size == layout.nbytes and np.array_equal(expected_buf, device_buf):
        differing = np.zeros(0, dtype=np.int64)  # the usual answer, in one pass
    else:
        differing = np.flatnonzero(expected_buf[:common] != device_buf[:common])
    unwritten = unwritten_stretch = np.zeros(0, dtype=np.int64)
    if canary is not None and differing.size:
        stretches = _canary_stretches(device_buf[:common], canary)
        held = stretches[differing] > 0
        unwritten, differing = differing[held], differing[~held]
        if padding == "ignore" and unwritten.size:  # padding is not looked at, canary or not
            unwritten = unwritten[~layout.locate_many(unwritten).padding]
        unwritten_stretch = stretches[unwritten]
    # Locating nothing still costs a pass over the layout: the usual equal buffer skips it.
    located = layout.locate_many(differing) if differing.size else None
    pad_offsets = differing if located is None else differing[located.padding]
    if padding == "ignore":
        dirty = np.zeros(0, dtype=np.int64)
    elif padding == "exact" or expected_is_tensor:
        dirty = pad_offsets
    else:
        dirty = _nonzero_padding(layout, device_buf, common)
        if unwritten.size:
            dirty = np.setdiff1d(dirty, unwritten, assume_unique=True)
    total = int(np.prod(layout.shape))
    # the elements with a byte at or past ``common``: lost in a short device buffer
    missing = (
        _elements_touched(layout, np.arange(common, layout.nbytes)) if common < layout.nbytes else 0
    )
    group_size = _group_size(layout)
    report = DiffReport(
        target=layout.target,
        layout=layout.name,
        role=layout.role,
        shape=tuple(layout.shape),
        dtype=layout.dtype.name,
        axis_names=layout.axis_names,
        tolerance=float(tolerance),
        padding_policy=padding,
        expected_nbytes=layout.nbytes,
        device_nbytes=int(device_buf.size),
        elements_total=total,
        elements_compared=total - missing,
        elements_missing=missing,
        dirty_padding_bytes=int(dirty.size),
        first_dirty_padding=[int(o) for o in dirty[:first]],
        group_size=group_size,
        dirty_padding_offsets=dirty,
        canary=None if canary is None else bytes(canary).hex(),
        expected_buffer=expected_buf,
    )
    if unwritten.size:
        _locate_unwritten(report, layout, unwritten, unwritten_stretch, first)
    if located is not None and not located.padding.all():
        rows = ~located.padding
        offsets, index, slots = differing[rows], located.index[rows], located.slot[rows]
        _compare_elements(
            report, layout, tolerance, first, expected_buf, device_buf, offsets, index, slots
        )
    report.findings = diagnose(layout, report, expected_buf, device_buf)
    return report


def _compare_elements(
    report: DiffReport,
    layout: BlockedLayout,
    tolerance: float,
    first: int,
    expected_buf: np.ndarray,
    device_buf: np.ndarray,
    offsets: np.ndarray,
    index: np.ndarray,
    slots: np.ndarray,
) -> None:
    """Decode the elements the differing bytes belong to and compare their values."""
    flat = np.ravel_multi_index(tuple(index.T), layout.shape)
    _, first_row = np.unique(flat, return_index=True)
    element_index = index[first_row]
    nparts = layout.encoding.nparts
    slot_offsets = np.stack(
        [layout.offsets_of(element_index, slot) for slot in range(nparts)], axis=1
    )
    complete = (slot_offsets < device_buf.size).all(axis=1)
    slot_offsets, element_index = slot_offsets[complete], element_index[complete]
    expected = layout.encoding.decode_slots(expected_buf[slot_offsets])
    got = layout.encoding.decode_slots(device_buf[slot_offsets])
    exp_f, got_f = expected.astype(np.float64), got.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(got_f - exp_f)
    both_nan = np.isnan(exp_f) & np.isnan(got_f)
    error[both_nan] = 0.0
    error[np.isnan(error)] = np.inf
    bad = error > tolerance
    report.within_tolerance = int(np.count_nonzero(~bad & (error > 0)))
    report.mismatched = int(np.count_nonzero(bad))
    report.max_abs_error = float(error[bad].max()) if report.mismatched else 0.0
    report.mismatch_index = element_index[bad]
    report.mismatch_expected = expected[bad]
    report.mismatch_got = got[bad]

    # Offsets are ascending, so each element's first row is its first differing byte.
    first_offset = offsets[first_row][complete]
    first_slot = slots[first_row][complete]
    bad_rows = np.flatnonzero(bad)
    shown = bad_rows[np.argsort(first_offset[bad_rows], kind="stable")[:first]]
    for row in shown:
        offset = int(first_offset[row])
        where = layout.locate(offset)
        report.first_mismatches.append(
            Mismatch(
                offset=offset,
                index=tuple(int(i) for i in element_index[row]),
                part=layout.encoding.part_names[int(first_slot[row])],
                entry=where.entry,
                bits=where.bits,
                expected=_scalar(expected[row]),
                got=_scalar(got[row]),
            )
        )
    channel_axis = _channel_axis(layout)
    if channel_axis is not None and report.mismatched:
        channels, counts = np.unique(report.mismatch_index[:, channel_axis], return_counts=True)
        report.per_channel = {int(c): int(n) for c, n in zip(channels, counts, strict=True)}
        if report.group_size:
            per_group: dict[int, int] = {}
            for channel, count in report.per_channel.items():
                group = channel // report.group_size
                per_group[group] = per_group.get(group, 0) + count
            report.per_group = per_group


def _canary_stretches(device_buf: np.ndarray, canary: bytes) -> np.ndarray:
    """Number each stretch where the device buffer holds the canary (repeated from its first
    byte) for at least the pattern's length in a row: 1, 2, ... per byte, 0 outside them. A
    shorter match is a coincidence — any byte equals the pattern's byte at its phase once in
    256 — not memory the device left alone; a real unwritten stretch (a row, a tail, a tile) is
    longer than the pattern."""
    pattern = np.resize(np.frombuffer(canary, np.uint8), device_buf.size)
    match = np.concatenate(([0], (device_buf == pattern).view(np.int8), [0]))
    edges = np.diff(match)
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    keep = ends - starts >= len(canary)
    labels = np.zeros(device_buf.size + 1, dtype=np.int64)
    number = np.arange(1, int(np.count_nonzero(keep)) + 1, dtype=np.int64)
    np.add.at(labels, starts[keep], number)
    np.add.at(labels, ends[keep], -number)
    stretches: np.ndarray = np.cumsum(labels[:-1])
    return stretches


def _locate_unwritten(
    report: DiffReport,
    layout: BlockedLayout,
    offsets: np.ndarray,
    stretch: np.ndarray,
    first: int,
) -> None:
    """Count the unwritten bytes and the elements they touch, and locate the first runs (an NPU
    that stops early leaves one run; one that skips rows, many). A run is one stretch of bytes
    holding the canary, from its first unwritten byte to its last: a byte inside it whose
    expected value happens to equal the pattern cannot be told apart and does not split it."""
    report.unwritten_bytes = int(offsets.size)
    report.unwritten_offsets = offsets
    report.unwritten_elements = _elements_touched(layout, offsets)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(stretch) != 0) + 1))
    ends = np.concatenate((starts[1:], [offsets.size]))
    for start, end in zip(starts[:first], ends[:first], strict=True):
        offset = int(offsets[start])
        where = layout.locate(offset)
        report.first_unwritten.append(
            Unwritten(
                offset=offset,
                count=int(offsets[end - 1]) - offset + 1,
                index=None if where.index is None else tuple(int(i) for i in where.index),
                padding=bool(where.padding),
            )
        )


def _scalar(value: Any) -> float:
    number = float(value)
    return int(number) if number.is_integer() else number


def _channel_axis(layout: BlockedLayout) -> int | None:
    names = layout.axis_names
    return names.index("c") if "c" in names else None


def _group_size(layout: BlockedLayout) -> int | None:
    """The channel block of a blocked channel axis (KL730 group, RKNN C2), if any."""
    axis = _channel_axis(layout)
    block = 1 if axis is None else layout.block_of(axis)
    return block if block > 1 else None


def _nonzero_padding(layout: BlockedLayout, device_buf: np.ndarray, common: int) -> np.ndarray:
    if not layout.padding_bytes:
        return np.zeros(0, dtype=np.int64)
    mask = layout.padding_bytes_mask()[:common]
    words = common // 8 * 8
    # Eight bytes at a time first: the usual answer is "none", and that is one AND pass.
    if (
        words
        and device_buf[:words].ctypes.data % 8 == 0
        and not np.bitwise_and(
            device_buf[:words].view(np.uint64), mask[:words].view(np.uint64)
        ).any()
        and not (device_buf[words:common] & mask[words:]).any()
    ):
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(device_buf[:common] & mask)


def _elements_touched(layout: BlockedLayout, offsets: np.ndarray) -> int:
    """How many elements have a byte at one of ``offsets``."""
    located = layout.locate_many(offsets)
    index = located.index[~located.padding]
    if not index.size:
        return 0
    return int(np.unique(np.ravel_multi_index(tuple(index.T), layout.shape)).size)


def _expected_bytes(layout: BlockedLayout, expected: Any) -> tuple[np.ndarray, bool]:
    if isinstance(expected, np.ndarray) and expected.shape == layout.shape:
        if expected.dtype != layout.dtype:
            raise LayoutError(
                f"expected tensor has dtype {expected.dtype.name}, the layout holds "
                f"{layout.dtype.name}"
            )
        return layout.pack(expected), True
    buf = as_bytes(expected, "expected")
    if buf.size != layout.nbytes:
        raise LayoutError(
            f"expected must be the logical tensor {layout.shape} {layout.dtype.name} or its "
            f"packed bytes ({layout.nbytes} bytes); got {buf.size} bytes"
        )
    return buf, False


# ------------------------------------------------------------------- naming the fault

FORENSICS_MIN_FRACTION = 0.05
"""Forensics runs when at least this fraction of elements differ (or the length is off)."""
FORENSICS_MAX_BYTES = 256 << 20


def diagnose(
    layout: BlockedLayout, report: DiffReport, expected_buf: np.ndarray, device_buf: np.ndarray
) -> list[Finding]:
    findings: list[Finding] = []
    if report.length_delta:
        how = "short" if report.length_delta < 0 else "long"
        kind = "truncated" if report.length_delta < 0 else "over-long"
        lost = f"; {report.elements_missing} elements missing" if report.elements_missing else ""
        findings.append(
            Finding(kind, f"device buffer is {abs(report.length_delta)} bytes {how}{lost}")
        )
    if report.unwritten_bytes:
        run = report.first_unwritten[0]
        place = "padding" if run.index is None else f"index {list(run.index)}"
        findings.append(
            Finding(
                "unwritten",
                f"{report.unwritten_bytes} bytes ({report.unwritten_elements} elements) still "
                f"hold the canary {report.canary}: the device never wrote them; first "
                f"{run.count} from offset {run.offset} ({place})"
                + (
                    f", {len(report.first_unwritten)} runs"
                    if len(report.first_unwritten) > 1
                    else ""
                ),
            )
        )
    if report.dirty_padding_bytes:
        first = report.first_dirty_padding[0]
        where = layout.locate(first)
        findings.append(
            Finding(
                "dirty-padding",
                f"{report.dirty_padding_bytes} padding bytes are not "
                f"{'zero' if report.padding_policy == 'zero' else 'as expected'}, first at "
                f"offset {first}"
                + (f" (entry {where.entry} bits {where.bits})" if where.entry is not None else ""),
            )
        )
    if _wants_forensics(report):
        swapped_pairs = _byte_patterns(expected_buf, device_buf)
        if swapped_pairs:
            return findings + swapped_pairs
    patterns: list[Finding] = []
    if report.mismatched and report.mismatch_expected is not None:
        patterns = _value_patterns(layout, report, expected_buf, device_buf)
        findings += patterns
    if not patterns and _wants_forensics(report):
        findings += _forensics(layout, report, expected_buf, device_buf)
    return findings


def _wants_forensics(report: DiffReport) -> bool:
    if report.expected_nbytes > FORENSICS_MAX_BYTES:
        return False
    widespread = report.mismatched >= FORENSICS_MIN_FRACTION * max(report.elements_total, 1)
    return bool(report.length_delta) or widespread


def _value_patterns(
    layout: BlockedLayout, report: DiffReport, expected_buf: np.ndarray, device_buf: np.ndarray
) -> list[Finding]:
    assert report.mismatch_expected is not None and report.mismatch_got is not None
    expected, got = report.mismatch_expected, report.mismatch_got
    count = expected.size
    findings = []
    if layout.dtype.kind in "iu":
        delta = np.abs(got.astype(np.int64) - expected.astype(np.int64))
        if np.all(delta == 1):
            findings.append(Finding("off-by-one", f"all {count} mismatched values are off by one"))
        flips = _bits(expected) ^ _bits(got)
        single = (flips != 0) & ((flips & (flips - 1)) == 0)
        if np.all(single):
            bits = sorted({int(b) for b in np.log2(flips.astype(np.float64)).astype(int)})
            findings.append(
                Finding(
                    "bit-flip",
                    f"all {count} mismatched values differ in a single bit "
                    f"(bit {', '.join(str(b) for b in bits[:8])})",
                )
            )
    if layout.encoding.nparts == 2:
        findings += _swapped_parts(layout, report, device_buf)
    if report.per_channel:
        findings += _swapped_channels(layout, report, expected_buf, device_buf)
    return findings


def _bits(values: np.ndarray) -> np.ndarray:
    unsigned = np.dtype(f"u{values.dtype.itemsize}")
    return np.ascontiguousarray(values).view(unsigned).astype(np.uint64)


def _swapped_parts(
    layout: BlockedLayout, report: DiffReport, device_buf: np.ndarray
) -> list[Finding]:
    """Do the mismatched elements decode right when their two byte slots are swapped?"""
    assert report.mismatch_index is not None and report.mismatch_expected is not None
    index = report.mismatch_index
    offsets = np.stack([layout.offsets_of(index, slot) for slot in (1, 0)], axis=1)
    if offsets.size and offsets.max() >= device_buf.size:
        return []
    swapped = layout.encoding.decode_slots(device_buf[offsets])
    if not np.array_equal(swapped, report.mismatch_expected):
        return []
    if layout.part_stride > 1:
        what = "the H and L byte planes are swapped"
    else:
        what = "the two bytes of each 16-bit value are swapped (endianness)"
    return [Finding("hl-swap" if layout.part_stride > 1 else "byte-swap", what)]


def _swapped_channels(
    layout: BlockedLayout,
    report: DiffReport,
    expected_buf: np.ndarray,
    device_buf: np.ndarray,
) -> list[Finding]:
    """Does a mismatched channel group (or channel) hold another group's expected data?"""
    if device_buf.size != layout.nbytes:
        return []
    size = report.group_size or 1
    axis = layout.axis_names.index("c")
    channels = layout.shape[axis]
    # A swapped block is wrong almost everywhere; scattered errors touch every block a little.
    per_block = report.per_group if report.group_size else report.per_channel
    elements_per_channel = int(np.prod(layout.shape)) // channels
    bad_blocks = sorted(b for b, n in per_block.items() if n >= 0.5 * size * elements_per_channel)
    if len(bad_blocks) < 2 or len(bad_blocks) > 64:
        return []
    expected = layout.unpack(expected_buf)
    device = layout.unpack(device_buf)

    def block(tensor: np.ndarray, number: int) -> np.ndarray:
        chosen = [slice(None)] * tensor.ndim
        chosen[axis] = slice(number * size, min((number + 1) * size, channels))
        return tensor[tuple(chosen)]

    pairs = []
    for a in bad_blocks:
        for b in bad_blocks:
            if a < b and block(device, a).shape == block(device, b).shape:
                same_ab = np.array_equal(block(device, a), block(expected, b))
                if same_ab and np.array_equal(block(device, b), block(expected, a)):
                    pairs.append((a, b))
    if not pairs:
        return []
    noun = "channel groups" if size > 1 else "channels"
    text = "; ".join(
        f"{noun} {a} and {b} are swapped (channels {a * size}-{(a + 1) * size - 1} hold "
        f"{b * size}-{(b + 1) * size - 1})"
        if size > 1
        else f"channels {a} and {b} are swapped"
        for a, b in pairs
    )
    return [Finding("channel-groups-swapped" if size > 1 else "channels-swapped", text)]


def _byte_patterns(expected_buf: np.ndarray, device_buf: np.ndarray) -> list[Finding]:
    if device_buf.size != expected_buf.size or device_buf.size % 2:
        return []
    if np.array_equal(expected_buf.reshape(-1, 2)[:, ::-1].reshape(-1), device_buf):
        return [Finding("byte-swap", "the buffer's bytes are swapped in pairs (16-bit endianness)")]
    return []


def _forensics(
    layout: BlockedLayout, report: DiffReport, expected_buf: np.ndarray, device_buf: np.ndarray
) -> list[Finding]:
    from npu_hil.harness.diff.forensics import explain

    tensor = layout.unpack(expected_buf)
    explanation = explain(
        device_buf, tensor, layout.target, role=layout.role, declared=layout, check_declared=False
    )
    best = explanation.best
    if best is None or not explanation.found:
        # Worth saying only when most of the tensor is wrong: a short buffer alone is no puzzle.
        return [Finding("layout", explanation.verdict())] if report.mismatched else []
    same = (
        best.layout == layout.name
        and best.params == layout.params
        and not best.swapped
        and best.nbytes == layout.nbytes
    )
    if same:
        return []
    kind = "hl-swap" if best.swapped and layout.part_stride > 1 else "layout"
    if best.swapped and layout.part_stride == 1:
        kind = "byte-swap"
    return [Finding(kind, explanation.verdict())]
