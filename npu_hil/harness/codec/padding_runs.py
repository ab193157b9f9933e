"""A padding mask as a few strided runs ``(start, length, count, stride, count2, stride2)``:
``count2`` groups ``stride2`` apart of ``count`` stretches of ``length`` bytes ``stride`` apart (a
row tail in every row of every plane), so a buffer packed again zeroes only its padding.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_PADDING_RUNS", "RUN_COST_BYTES", "strided_runs"]

MAX_PADDING_RUNS = 16
"""Most strided runs :meth:`BlockedLayout._zero_padding` zeroes one by one (each costs a few
microseconds of Python) before it clears the whole buffer instead."""

RUN_COST_BYTES = 32
"""What zeroing one run costs beyond its bytes, in bytes of a whole-buffer clear (a store or a
short move per run against a memset's 32 bytes a cycle): the runs are zeroed one by one when
``runs * RUN_COST_BYTES + padding bytes < buffer bytes``, else the whole buffer is cleared."""


def strided_runs(mask: np.ndarray) -> list[tuple[int, int, int, int, int, int]] | None:
    """The True bytes of ``mask`` as few strided runs (see ``BlockedLayout._padding_runs``),
    or None when there are more than :data:`MAX_PADDING_RUNS` or so many short ones that
    clearing the whole buffer is cheaper (:data:`RUN_COST_BYTES`)."""
    flags = np.concatenate(([False], np.asarray(mask, dtype=bool), [False])).view(np.int8)
    edges = np.flatnonzero(np.diff(flags))
    starts, ends = edges[0::2], edges[1::2]
    if starts.size == 0:
        return []
    lengths = ends - starts
    if RUN_COST_BYTES * starts.size + int(lengths.sum()) >= mask.size:
        return None
    level1 = _progressions(starts, lengths)
    if level1 is None:
        return None
    # Second level: equal first-level runs spaced evenly (one per row or per plane).
    groups: dict[tuple[int, int, int], list[int]] = {}
    for start, length, count, stride in level1:
        groups.setdefault((length, count, stride), []).append(start)
    runs: list[tuple[int, int, int, int, int, int]] = []
    for (length, count, stride), group_starts in groups.items():
        first = np.asarray(group_starts, dtype=np.int64)
        ones = np.ones(first.size, dtype=np.int64)
        level2 = _progressions(first, ones)
        if level2 is None:
            return None
        runs.extend((s, length, count, stride, n, step) for s, _, n, step in level2)
        if len(runs) > MAX_PADDING_RUNS:
            return None
    return runs


def _progressions(
    starts: np.ndarray, lengths: np.ndarray, limit: int = 4 * MAX_PADDING_RUNS
) -> list[tuple[int, int, int, int]] | None:
    """Sorted ``starts`` with their ``lengths`` as maximal arithmetic progressions of equal
    length, ``(start, length, count, step)``; None beyond ``limit`` of them."""
    n = int(starts.size)
    step = np.diff(starts)
    # Start indices where the step (to the next start) or the length changes.
    step_changes = np.flatnonzero(step[1:] != step[:-1]) + 1
    length_changes = np.flatnonzero(lengths[1:] != lengths[:-1]) + 1
    out: list[tuple[int, int, int, int]] = []
    i = 0
    while i < n:
        if len(out) >= limit:
            return None
        if i == n - 1:
            out.append((int(starts[i]), int(lengths[i]), 1, 1))
            break
        # The progression from i keeps step[i] through start index j_step and the length
        # through j_len.
        k = int(np.searchsorted(step_changes, i, side="right"))
        j_step = int(step_changes[k]) if k < step_changes.size else n - 1
        k = int(np.searchsorted(length_changes, i, side="right"))
        j_len = int(length_changes[k]) - 1 if k < length_changes.size else n - 1
        j = min(j_step, j_len)
        if j == i:
            out.append((int(starts[i]), int(lengths[i]), 1, 1))
        else:
            out.append((int(starts[i]), int(lengths[i]), j - i + 1, int(step[i])))
        i = j + 1
    return out
