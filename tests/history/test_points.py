"""A record as the history keeps it: latency, the worst output's accuracy, noise, the run."""

from __future__ import annotations

from typing import Any

from npu_hil.harness.history.model import case_point, run_entry
from npu_hil.harness.report.records import TensorFinding, TestRecord, last_attempts

LATENCY = {
    "runs": 12,
    "warmup": 2,
    "p50_ms": 1.5,
    "p90_ms": 1.7,
    "p99_ms": 2.0,
    "min_ms": 1.4,
    "max_ms": 2.0,
    "mean_ms": 1.6,
    "stdev_ms": 0.1,
    "jitter_ms": 0.5,
    "source": "adapter",
}


def _out(name: str, snr: Any, cosine: Any) -> TensorFinding:
    accuracy = {"snr_db": snr, "cosine": cosine, "max_abs_err": 0.0, "max_rel_err": 0.0}
    return TensorFinding(name, "output", "pass", "", accuracy=accuracy)


def _record(**fields: Any) -> TestRecord:
    base: dict[str, Any] = {
        "nodeid": "t.py::test_x[rk3588-01]",
        "outcome": "passed",
        "duration_s": 0.1,
        "board": "rk3588-01",
        "target": "rk3588",
        "ran_on": "sim",
    }
    return TestRecord(**{**base, **fields})


def test_latency_is_kept_and_accuracy_is_the_worst_output() -> None:
    record = _record(
        latency=LATENCY,
        tensors=[
            TensorFinding("in", "input", "pass", ""),
            _out("a", 41.0, 0.9999),
            _out("b", "inf", 0.99),
            _out("c", 30.5, None),
        ],
    )
    point = case_point(record, "20261201T000000Z-abcdef")
    assert point.key == ("rk3588-01", "t.py::test_x[rk3588-01]")
    assert point.latency is not None and point.latency["p50_ms"] == 1.5
    assert point.latency["runs"] == 12 and "stdev_ms" not in point.latency
    assert point.accuracy == {"snr_db": 30.5, "cosine": 0.99}
    assert (point.outcome, point.ran_on, point.noisy) == ("passed", "sim", "")


def test_inf_is_kept_and_nothing_is_none() -> None:
    exact = case_point(_record(tensors=[_out("a", "inf", 1.0)]), "r")
    assert exact.accuracy == {"snr_db": "inf", "cosine": 1.0}
    assert exact.latency is None
    bare = case_point(_record(tensors=[TensorFinding("in", "input", "pass", "")]), "r")
    assert bare.accuracy is None
    zeros = case_point(_record(tensors=[_out("z", "inf", None)]), "r")
    assert zeros.accuracy == {"snr_db": "inf", "cosine": None}


def test_a_skipped_case_ran_nowhere_and_a_moved_board_is_noisy() -> None:
    assert case_point(_record(outcome="skipped"), "r").ran_on == ""
    zone = {"zone": "thermal_zone0", "type": "soc", "temp_mc": 40000}
    state = {"before": {"thermal": [zone]}, "after": {"thermal": [{**zone, "temp_mc": 46000}]}}
    assert "rose 6.0 °C" in case_point(_record(board_state=state), "r").noisy


def test_run_points_keep_the_last_attempt_and_the_entry_counts_them() -> None:
    first = _record(outcome="failed")
    again = _record()
    other = _record(nodeid="t.py::test_y[rk3588-01]", outcome="skipped")
    # one point per case, the last record of a nodeid winning (as in the run's report)
    points = [
        case_point(r, "20261201T000000Z-abcdef") for r in last_attempts([first, other, again])
    ]
    assert [(p.nodeid[-16:], p.outcome) for p in points] == [
        ("test_y[rk3588-01]"[-16:], "skipped"),
        ("test_x[rk3588-01]"[-16:], "passed"),
    ]
    meta = {"run_id": "20261201T000000Z-abcdef", "run_key": "k1", "complete": True}
    entry = run_entry(meta, points, 1764547200.0)
    assert entry.complete and entry.run_key == "k1" and entry.cases == 2
    assert entry.counts == {"passed": 1, "failed": 0, "error": 0, "skipped": 1}
    assert not run_entry({**meta, "complete": False}, points, 0.0).complete


def test_records_without_regressions_still_load() -> None:
    data = _record().to_dict()
    assert data["regressions"] == []
    del data["regressions"]
    assert TestRecord.from_dict(data).regressions == []
    finding = {"metric": "p50_ms", "severity": "warning", "message": "m"}
    assert TestRecord.from_dict(_record(regressions=[finding]).to_dict()).regressions == [finding]
