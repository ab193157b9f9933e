"""The stale-result check (docs/model-developer/failures.md): the model run again on inputs derived
from the caller's, and every output that came back byte for byte the same flagged ``stale``. A
runtime handing back the previous job's buffers returns plausible bytes: two runs on inputs that
must give different outputs make the difference certain."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping

import numpy as np

from npu_hil.harness.pipeline.result import ModelRun, TensorRun

__all__ = ["derived_inputs", "judge_stale"]


def derived_inputs(given: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Second inputs for the check: for each input, values drawn afresh over the same range
    (its min to max; [-1, 1] or [-8, 8] when it is constant) with a seed derived from all the
    inputs' bytes, so the second run is reproducible and a fresh draw, not a shifted copy that
    a saturating or quantizing model could map onto the same outputs. Booleans are inverted."""
    digest = hashlib.sha256()
    for name in sorted(given):
        digest.update(name.encode("utf-8") + b"\0")
        digest.update(np.ascontiguousarray(given[name]).tobytes())
    rng = np.random.default_rng(int.from_bytes(digest.digest()[:8], "little"))
    return {name: _redraw(np.asarray(given[name]), rng) for name in given}


def _redraw(array: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    dtype = array.dtype
    if dtype == np.bool_:
        return np.asarray(np.logical_not(array))
    if array.size == 0:
        return np.array(array, copy=True)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        first, last = int(array.min()), int(array.max())
        if first == last:
            first, last = max(int(info.min), first - 8), min(int(info.max), last + 8)
        return rng.integers(first, last, array.shape, endpoint=True).astype(dtype)
    values = array.astype(np.float64)
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 1.0)
    if low == high:
        low, high = low - 1.0, high + 1.0
    return rng.uniform(low, high, array.shape).astype(dtype)


def judge_stale(first: ModelRun, second: ModelRun) -> ModelRun:
    """``first`` with each output the check flagged (``stale``) or could not judge
    (``stale_note``), and ``second`` as its :attr:`ModelRun.stale_check`."""
    others = {t.name: t for t in second.outputs}
    outputs = tuple(_judge(t, others.get(t.name)) for t in first.outputs)
    return dataclasses.replace(first, outputs=outputs, stale_check=second)


def _judge(first: TensorRun, second: TensorRun | None) -> TensorRun:
    if second is None:
        return dataclasses.replace(first, stale_note="the second run did not return this output")
    if first.data.size != second.data.size or not np.array_equal(first.data, second.data):
        return first
    expected_a, expected_b = first.diff.expected_buffer, second.diff.expected_buffer
    if expected_a is None or expected_b is None:
        return dataclasses.replace(first, stale_note="no host expectation to compare")
    if expected_a.size == expected_b.size and np.array_equal(expected_a, expected_b):
        return dataclasses.replace(
            first,
            stale_note=(
                "not applicable: the host's expected output did not change between the two "
                "inputs either (this output does not depend on the input)"
            ),
        )
    changed = (
        int(np.count_nonzero(expected_a != expected_b))
        if expected_a.size == expected_b.size
        else expected_a.size
    )
    digest = hashlib.sha256(first.data.tobytes()).hexdigest()[:16]
    return dataclasses.replace(
        first,
        stale=(
            f"output {first.name!r} came back byte for byte the same on two different inputs "
            f"({first.data.size} bytes, sha256 {digest}…), although the host expected "
            f"{changed} of its bytes to change: the device returned a stale result"
        ),
    )
