"""The soak's faults in the simulated runtime: ``leak`` keeps what it says per run, and
``flaky-errors`` fails about the share it says, the same runs for the same seed."""

from __future__ import annotations

import pytest

from npu_hil.harness.sim.faults import _KEPT, Fault, apply_soak_faults
from npu_hil.harness.simkit.errors import SimRefusal


def leaked_bytes() -> int:
    return sum(len(b) for b in _KEPT)


def test_leak_keeps_kib_per_run() -> None:
    before = leaked_bytes()
    for index in range(5):
        apply_soak_faults([Fault("leak", {"kib": 3})], index)
    assert leaked_bytes() - before == 5 * 3 * 1024


def _failed(rate: float, seed: int, runs: int = 2000) -> list[int]:
    failed = []
    for index in range(runs):
        try:
            apply_soak_faults([Fault("flaky-errors", {"rate": rate, "seed": seed})], index)
        except SimRefusal as exc:
            assert exc.kind == "DeviceError" and exc.stage == "run"
            assert f"run {index} failed" in exc.message
            failed.append(index)
    return failed


@pytest.mark.slow
def test_flaky_errors_fail_their_share_reproducibly() -> None:
    failed = _failed(0.2, seed=1)
    assert len(failed) == pytest.approx(400, abs=60)
    assert _failed(0.2, seed=1) == failed
    assert _failed(0.2, seed=2) != failed
    assert len(_failed(1.0, seed=0, runs=50)) == 50
