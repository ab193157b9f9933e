"""The secret scrubber is linear in its input: a failure message of 100,000 letters (a board's
log, a dumped buffer) is scrubbed in one pass, and the passwords around such runs are still
found. Linear is asserted as a ratio of two sizes measured in the same test (a quadratic
pattern gives about 16x for 4x the text, a linear one about 4x)."""

from __future__ import annotations

import time

import pytest

from npu_hil.harness.redact import REDACTED, scrub


def _seconds(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        scrub(text)
        best = min(best, time.perf_counter() - started)
    return best


def _seconds_once(text: str) -> float:
    started = time.perf_counter()
    scrub(text)
    return time.perf_counter() - started


def test_a_long_run_of_letters_is_scrubbed_in_linear_time() -> None:
    small, large = _seconds("a" * 25_000), _seconds("a" * 100_000)
    assert large < max(8 * small, 0.05), (small, large)


def test_passwords_next_to_long_runs_are_still_found() -> None:
    for text in (
        "x" * 50_000 + "https://u:hunter2@host",
        "see 1http://bob:hunter2@host/x",
        "git+ssh://me:hunter2@h:22/r",
    ):
        scrubbed = scrub(text)
        assert "hunter2" not in scrubbed and REDACTED in scrubbed
    assert scrub("http://host/a:b@c") == "http://host/a:b@c"  # a path, not a password


ADVERSARIAL = {
    "letters": "a",
    "settings": "password=",
    "setting names": "pass",
    "url schemes": "a://",
    "url users": "a://b:",
    "pem heads": "-----BEGIN ",
    "base64 runs": "AbC9/",
    "words": "x ",
    "at signs": "@:/",
}


@pytest.mark.slow
@pytest.mark.parametrize("unit", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_every_pattern_is_linear_at_ten_megabytes(unit: str) -> None:
    big = 10_000_000 // len(unit)
    small, large = _seconds_once(unit * (big // 4)), _seconds_once(unit * big)
    assert large < max(8 * small, 0.05), (small, large)


def test_settings_in_board_logs_are_removed_and_counts_are_not() -> None:
    line = 'rknpu: login password=hunter2 token:abc123, "api_key": "sk-9" passwords=3'
    scrubbed = scrub(line)
    assert "hunter2" not in scrubbed and "abc123" not in scrubbed and "sk-9" not in scrubbed
    assert "passwords=3" in scrubbed
    prose = "tags.password: secrets do not belong in the inventory"
    assert scrub(prose) == prose
    assert scrub(scrubbed) == scrubbed  # scrubbing twice changes nothing more
