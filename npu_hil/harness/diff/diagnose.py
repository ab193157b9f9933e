"""Name the fault behind a diff: cheap tests on the mismatched elements (off by one, bit flips,
L/H bytes or channel groups swapped), on the buffer (bytes swapped in pairs), and layout
forensics when most of the tensor is wrong or the length is off.
"""

from __future__ import annotations

import numpy as np

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.diff.report import DiffReport, Finding

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
