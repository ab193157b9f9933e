"""The secret scrubber is linear in its input: a failure message of 100,000 letters (a board's
log, a dumped buffer) is scrubbed in one pass, and the passwords around such runs are still
found. Linear is asserted as a ratio of two sizes measured in the same test (a quadratic
pattern gives about 16x for 4x the text, a linear one about 4x)."""

from __future__ import annotations

import time

from npu_hil.harness.redact import REDACTED, scrub


def _seconds(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        scrub(text)
        best = min(best, time.perf_counter() - started)
    return best


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
