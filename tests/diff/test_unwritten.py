"""The diff's ``unwritten`` finding: device bytes that still hold the job's canary where the
expected buffer differs from it, located like any mismatch and taking precedence over it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_hil.harness.board.job import COMMON_FILLS, JobRefused, canary_for, check_canary
from npu_hil.harness.codec import get_layout
from npu_hil.harness.diff import diff_buffers

CANARY = canary_for("rk3588-01-conv3x3-0000")
LAYOUT = get_layout("rk3588", "NC1HWC2", (1, 20, 3, 5), "int8")


def values(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(-128, 128, LAYOUT.shape).astype(np.int8)


def filled(nbytes: int) -> np.ndarray:
    return np.resize(np.frombuffer(CANARY, np.uint8), nbytes)


def test_canary_for_is_a_pattern_per_job() -> None:
    patterns = {canary_for(f"job-{i}") for i in range(500)}
    assert len(patterns) == 500  # two jobs differ
    for pattern in patterns:
        assert len(pattern) == 8 and len(set(pattern)) > 1
        assert not set(pattern) & COMMON_FILLS
    assert canary_for("job-1") == canary_for("job-1")  # a result can be checked against it


@pytest.mark.parametrize(
    "bad", ["", "a5", "a5a5a5a5", "00" * 8, "xyz1", "AB12", 7, ["ab"], "ab" * 65]
)
def test_a_canary_that_is_no_pattern_is_refused(bad: object) -> None:
    with pytest.raises(JobRefused) as info:
        check_canary("canary", bad)
    assert info.value.field == "canary"


def test_a_tail_the_device_never_wrote_is_unwritten_and_located() -> None:
    x = values()
    expected = LAYOUT.pack(x)
    device = expected.copy()
    device[-100:] = filled(expected.size)[-100:]
    report = diff_buffers(LAYOUT, x, device, canary=CANARY)
    assert report.verdict == "unwritten" and not report.ok
    held = np.flatnonzero(expected[-100:] != filled(expected.size)[-100:]) + expected.size - 100
    assert report.unwritten_bytes == held.size
    assert report.mismatched == 0 and report.dirty_padding_bytes == 0  # precedence
    first = report.first_unwritten[0]
    assert first.offset == held[0]
    where = LAYOUT.locate(first.offset)
    assert first.index == (None if where.index is None else tuple(where.index))
    assert report.unwritten_elements > 0
    assert any(f.kind == "unwritten" for f in report.findings)
    assert CANARY.hex() in report.summary()
    assert report.to_dict()["verdict"] == "unwritten"


def test_a_tail_is_one_run_even_where_an_expected_byte_equals_the_pattern() -> None:
    # Inside a tail the device never wrote, an expected byte that is the pattern's own byte at
    # its phase cannot be told apart: it is not counted, and it does not split the tail.
    x = values()
    expected = LAYOUT.pack(x)
    pattern = filled(expected.size)
    data = np.flatnonzero(~LAYOUT.padding_mask())
    tail = int(data[-60])
    for inside in (tail + 5, tail + 17, tail + 30):
        expected[inside] = pattern[inside]
    expected[tail] = pattern[tail] ^ 0xFF  # the tail's first byte is one the device skipped
    x = LAYOUT.unpack(expected)
    expected = LAYOUT.pack(x)
    device = expected.copy()
    device[tail:] = pattern[tail:]
    report = diff_buffers(LAYOUT, x, device, canary=CANARY)
    assert report.verdict == "unwritten"
    (run,) = report.first_unwritten
    assert (run.offset, run.offset + run.count) == (tail, expected.size)
    assert report.unwritten_bytes == int(np.count_nonzero(expected[tail:] != pattern[tail:]))
    assert report.unwritten_bytes < run.count


def test_two_skipped_stretches_are_two_runs() -> None:
    x = values()
    device = LAYOUT.pack(x)
    pattern = filled(device.size)
    device[40:80] = pattern[40:80]
    device[200:260] = pattern[200:260]
    report = diff_buffers(LAYOUT, x, device, canary=CANARY)
    runs = report.first_unwritten
    assert len(runs) == 2
    assert runs[0].offset >= 40 and runs[0].offset + runs[0].count <= 80
    assert runs[1].offset >= 200 and runs[1].offset + runs[1].count <= 260


def test_without_the_canary_the_same_bytes_are_a_plain_mismatch() -> None:
    x = values()
    device = LAYOUT.pack(x)
    device[-100:] = filled(device.size)[-100:]
    report = diff_buffers(LAYOUT, x, device)
    assert report.verdict == "different" and report.unwritten_bytes == 0


def test_bytes_that_legitimately_equal_the_pattern_are_not_flagged() -> None:
    # Expected values that are the pattern's own bytes at the pattern's phase: a device that
    # wrote them is right, and nothing is unwritten.
    x = values()
    expected = LAYOUT.pack(x)
    pattern = filled(expected.size)
    data = ~LAYOUT.padding_mask()
    chosen = np.flatnonzero(data)[::3]
    expected[chosen] = pattern[chosen]
    x_same = LAYOUT.unpack(expected)
    report = diff_buffers(LAYOUT, x_same, expected.copy(), canary=CANARY)
    assert report.verdict == "equal" and report.unwritten_bytes == 0


def test_other_mismatches_are_still_reported_beside_unwritten_bytes() -> None:
    x = values()
    device = LAYOUT.pack(x)
    device[-64:] = filled(device.size)[-64:]
    first_data = int(np.flatnonzero(~LAYOUT.padding_mask())[0])
    device[first_data] ^= 0x01
    report = diff_buffers(LAYOUT, x, device, canary=CANARY)
    assert report.verdict == "unwritten"
    assert report.mismatched == 1 and report.first_mismatches[0].offset == first_data


def test_a_lone_byte_that_happens_to_equal_the_pattern_is_a_plain_mismatch() -> None:
    x = values()
    device = LAYOUT.pack(x)
    pattern = filled(device.size)
    data = np.flatnonzero(~LAYOUT.padding_mask())
    offset = int(next(o for o in data if device[o] != pattern[o]))
    device[offset] = pattern[offset]  # a wrong value that, once in 256, is the canary's byte
    report = diff_buffers(LAYOUT, x, device, canary=CANARY)
    assert report.verdict == "different" and report.unwritten_bytes == 0 and report.mismatched == 1


def test_padding_ignored_means_unwritten_padding_too() -> None:
    x = values()
    device = LAYOUT.pack(x)
    pad = LAYOUT.padding_mask()
    device[pad] = filled(device.size)[pad]
    assert diff_buffers(LAYOUT, x, device, canary=CANARY).verdict == "unwritten"
    assert diff_buffers(LAYOUT, x, device, canary=CANARY, padding="ignore").verdict == "equal"


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.text(min_size=1, max_size=20))
def test_unwritten_counts_exactly_the_canary_bytes_that_differ(seed: int, job: str) -> None:
    canary = canary_for(job)
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, LAYOUT.shape).astype(np.int8)
    expected = LAYOUT.pack(x)
    pattern = np.resize(np.frombuffer(canary, np.uint8), expected.size)
    lost = np.zeros(expected.size, dtype=bool)
    for _ in range(int(rng.integers(0, 6))):  # stretches the device skipped, each >= 8 bytes
        start = int(rng.integers(0, expected.size - 8))
        lost[start : start + int(rng.integers(8, 200))] = True
    device = np.where(lost, pattern, expected).astype(np.uint8)
    report = diff_buffers(LAYOUT, x, device, canary=canary)
    assert report.unwritten_bytes == int(np.count_nonzero(lost & (expected != pattern)))
    assert report.mismatched == 0 and report.dirty_padding_bytes == 0
    assert report.ok == (report.unwritten_bytes == 0)


@pytest.mark.slow
def test_cli_diff_takes_the_canary(tmp_path: Path) -> None:
    x = values()
    np.save(tmp_path / "ref.npy", x)
    device = LAYOUT.pack(x)
    device[-100:] = filled(device.size)[-100:]
    (tmp_path / "dev.bin").write_bytes(device.tobytes())
    common = [
        "--target",
        "rk3588",
        "--layout",
        "NC1HWC2",
        "--shape",
        "1,20,3,5",
        "--dtype",
        "int8",
        "--expected",
        str(tmp_path / "ref.npy"),
        "--device",
        str(tmp_path / "dev.bin"),
    ]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "npu_hil.harness.cli.main", "diff", *common, *args],
            capture_output=True,
            text=True,
            check=False,
        )

    found = cli("--canary", CANARY.hex(), "--json")
    assert found.returncode == 1, found.stderr
    data = json.loads(found.stdout)
    assert data["verdict"] == "unwritten" and data["unwritten_bytes"] > 0
    assert data["first_unwritten"][0]["offset"] >= device.size - 100
    plain = cli("--json")
    assert json.loads(plain.stdout)["verdict"] == "different"
    refused = cli("--canary", "a5a5")
    assert refused.returncode == 2 and "repeated byte" in refused.stderr
