"""A baseline is of one subject: the same model fed the same inputs. The digests that say what a
run fed its model, and how a changed test starts a new baseline."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from npu_hil.harness.history.baseline import Settings, evaluate, new_baseline_note, same_subject
from npu_hil.harness.history.model import CasePoint, subject_after
from npu_hil.harness.pipeline.model import input_digest

MODEL = {"identity.onnx": "a" * 64}
ARRAYS = hnp.arrays(
    dtype=st.sampled_from([np.uint8, np.int8, np.float16, np.float32]),
    shape=hnp.array_shapes(min_dims=1, max_dims=4, max_side=5),
)


@given(ARRAYS)
def test_the_same_inputs_give_the_same_digest_and_any_change_another(array: np.ndarray) -> None:
    digest = input_digest({"input": array})
    assert digest == input_digest({"input": array.copy()})
    assert len(digest) == 32
    flipped = array.copy()
    flipped.reshape(-1).view(np.uint8)[0] ^= 1
    assert input_digest({"input": flipped}) != digest
    assert input_digest({"other": array}) != digest
    assert input_digest({"input": array[np.newaxis]}) != digest
    assert input_digest({"input": array.view(np.uint8)}) != digest or array.dtype == np.uint8


def test_the_digest_does_not_depend_on_the_order_inputs_are_given() -> None:
    a, b = np.zeros((1, 3), np.float32), np.ones((2,), np.int8)
    assert input_digest({"a": a, "b": b}) == input_digest({"b": b, "a": a})
    # A non-contiguous view is the data it shows, not the memory under it.
    wide = np.arange(12, dtype=np.uint8).reshape(3, 4)
    assert input_digest({"x": wide[:, ::2]}) == input_digest({"x": wide[:, ::2].copy()})


def test_a_subject_is_the_runs_models_by_content_and_their_inputs() -> None:
    fed = input_digest({"input": np.arange(4, dtype=np.uint8)})
    first = subject_after("", MODEL, fed)
    assert first == subject_after("", {"renamed.onnx": "a" * 64}, fed)  # the content, not the path
    assert first != subject_after("", {"identity.onnx": "b" * 64}, fed)
    assert first != subject_after("", MODEL, input_digest({"input": np.zeros(4, np.uint8)}))
    assert subject_after(first, MODEL, fed) != first  # a second run is part of the subject


def _point(run: int, subject: str, snr: object) -> CasePoint:
    return CasePoint(
        f"20261201T{run:06d}Z-abcdef",
        "suite/test_ref.py::test_model[rk3588-01]",
        "rk3588-01",
        "rk3588",
        "passed",
        "hw",
        None,
        {"snr_db": snr, "cosine": None},
        subject=subject,
    )


OLD, NEW = "1" * 32, "2" * 32


def test_figures_of_another_subject_are_no_baseline() -> None:
    earlier = [_point(1, OLD, "inf"), _point(2, OLD, "inf")]
    now = _point(3, NEW, 40.0)
    assert same_subject(now, earlier) == []
    assert evaluate(now, earlier, perf=False, accuracy_thresholds=True, settings=Settings()) == []
    # The same drop against a baseline of its own subject is found.
    same = [dataclasses.replace(p, subject=NEW) for p in earlier]
    (found,) = evaluate(now, same, perf=False, accuracy_thresholds=True, settings=Settings())
    assert found.metric == "snr_db" and found.severity == "failure"


def test_a_new_baseline_is_named_once_with_the_run_it_follows() -> None:
    earlier = [_point(1, OLD, 40.0), _point(2, OLD, 40.0)]
    note = new_baseline_note(_point(3, NEW, 40.0), earlier)
    assert note.startswith("new baseline: its model or inputs changed since run 20261201T000002Z")
    assert "111111111111 then, 222222222222 now" in note
    # The run after it has a baseline of its own subject: nothing to say.
    assert new_baseline_note(_point(4, NEW, 40.0), [*earlier, _point(3, NEW, 40.0)]) == ""
    # No earlier point, or only failed ones: no baseline to leave.
    assert new_baseline_note(_point(1, NEW, 40.0), []) == ""
    failed = dataclasses.replace(_point(1, OLD, 40.0), outcome="failed")
    assert new_baseline_note(_point(2, NEW, 40.0), [failed]) == ""


def test_runs_that_did_not_record_their_subject_are_named_as_such() -> None:
    note = new_baseline_note(_point(2, NEW, 40.0), [_point(1, "", 40.0)])
    assert "did not record its model and inputs" in note
