"""Flakiness, failing since and the series, on histories written through the store."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npu_hil.harness.history.flaky import (
    ABSENT,
    case_histories,
    failing_since,
    flakiness,
)
from npu_hil.harness.history.store import load_history
from npu_hil.harness.report.compare import outcome_state, state_flips

A = ("rk3588-01", "tests/hil/test_reference.py::test_reference_model[identity-rk3588-01]")
B = ("kl730-01", "tests/hil/test_reference.py::test_reference_model[conv-kl730-01]")

OUTCOME = st.sampled_from(["passed", "failed", "error", "skipped", None])


@pytest.mark.slow
@given(st.sampled_from(["passed", "failed", "error"]), st.integers(0, 30), st.lists(OUTCOME))
def test_a_constant_strip_is_not_flaky(outcome: str, repeat: int, noise: list[Any]) -> None:
    same_state = [outcome] * repeat
    assert flakiness(same_state) == (0.0, 0)
    # skips and absences are no states: spread among a constant strip they change nothing
    padded = [o for pair in zip(same_state, ["skipped"] * repeat, strict=True) for o in pair]
    assert flakiness(padded)[0] == 0.0


@given(st.integers(2, 40), st.booleans(), st.sampled_from(["failed", "error"]))
def test_strict_alternation_is_fully_flaky(length: int, pass_first: bool, bad: str) -> None:
    strip = [("passed" if (i % 2 == 0) == pass_first else bad) for i in range(length)]
    rate, flips = flakiness(strip)
    assert rate == 1.0
    assert flips == length - 1


@pytest.mark.slow
@given(st.lists(OUTCOME, max_size=60))
def test_flakiness_is_a_share_and_counts_the_comparison_flips(strip: list[str | None]) -> None:
    rate, flips = flakiness(strip)
    assert 0.0 <= rate <= 1.0
    states = [s for s in map(outcome_state, strip) if s is not None]
    assert flips == state_flips(states)  # the report's "flaky" list counts the same flips
    if len(states) > 1:
        assert math.isclose(rate * (len(states) - 1), flips)


@pytest.mark.slow
@given(st.lists(OUTCOME, max_size=60))
def test_failing_since_is_the_first_of_the_trailing_failures(strip: list[str | None]) -> None:
    index = failing_since(strip)
    states = [(i, outcome_state(o)) for i, o in enumerate(strip) if outcome_state(o) is not None]
    if not states or states[-1][1] == "pass":
        assert index is None
        return
    assert index is not None
    assert outcome_state(strip[index]) == "fail"
    # every state from there on fails, and the state before it (if any) passed
    assert all(s == "fail" for i, s in states if i >= index)
    before = [s for i, s in states if i < index]
    assert not before or before[-1] == "pass"


def test_failing_since_over_skips_and_absences() -> None:
    strip = ["passed", "failed", "skipped", None, "error", "skipped"]
    assert failing_since(strip) == 1
    assert failing_since(["failed", "passed"]) is None
    assert failing_since(["skipped", None]) is None


def test_case_histories_from_the_store(reports: Path, write: Any) -> None:
    index = write(
        {
            A: ["passed", "passed", "failed", "passed", "failed", "skipped", "failed"],
            B: [None, None, "passed", "passed", "passed", "passed", "passed"],
        },
        p50=lambda i: 0.075 + 0.001 * i,
    )
    history = load_history(reports, "key-nightly")
    assert [e.run_id for e in history.runs] == [e.run_id for e in index]
    found = {c.key: c for c in case_histories(history)}
    a, b = found[A], found[B]
    assert a.strip == ("passed", "passed", "failed", "passed", "failed", "skipped", "failed")
    assert a.run_ids == tuple(e.run_id for e in index)
    assert a.failing_since == (index[4].run_id, index[4].started)
    assert a.flips == 3 and math.isclose(a.flakiness, 3 / 5)
    assert math.isclose(a.pass_rate or 0, 3 / 6)
    assert a.latency_p50[5] is None  # skipped: nothing timed
    assert math.isclose(a.latency_last() or 0, 0.081)
    assert a.last_outcome == "failed"
    assert b.strip[:2] == (ABSENT, ABSENT)
    assert b.failing_since is None and b.flakiness == 0.0 and b.pass_rate == 1.0
    assert b.to_dict()["strip"][2] == {"run_id": index[2].run_id, "outcome": "passed"}


def test_the_window_is_the_newest_runs(reports: Path, write: Any) -> None:
    index = write({A: ["failed"] * 3 + ["passed"] * 2 + ["failed"] * 3, B: ["passed"] * 2})
    history = load_history(reports)
    last3 = {c.key: c for c in case_histories(history, runs=3)}
    assert last3[A].strip == ("failed",) * 3
    assert last3[A].failing_since == (index[5].run_id, index[5].started)
    assert B not in last3  # not in the window's runs at all
    whole = {c.key: c for c in case_histories(history, runs=100)}
    assert whole[A].failing_since == (index[5].run_id, index[5].started)
    assert whole[B].strip == ("passed", "passed") + (ABSENT,) * 6


def test_filters_and_an_exact_snr(reports: Path, write: Any) -> None:
    write({A: ["passed"] * 3, B: ["passed"] * 3}, snr=lambda i: "inf" if i < 2 else 38.5)
    history = load_history(reports)
    only = case_histories(history, board="kl730-01")
    assert [c.key for c in only] == [B]
    assert [c.key for c in case_histories(history, case="identity")] == [A]
    assert only[0].snr_db[0] == math.inf and only[0].snr_last() == 38.5
    assert only[0].to_dict()["snr_db"][:2] == ["inf", "inf"]
