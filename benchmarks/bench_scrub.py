"""The secret scrubber on 10 MB texts: a board's log, pytest's failure text, and the adversarial
ones (each pattern's fixed part repeated), in MB/s and as a ratio to the baseline.

    python benchmarks/bench_scrub.py [--megabytes 10] [--repeats 3]

Baseline, measured in the same run on the same text: ``json.dumps`` of it, what writing the
text into a record costs anyway. Each figure is the best of the repeats.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

from npu_hil.harness.redact import scrub

TEXTS = {
    "board log": "[  12.345] rknpu: job done in 1234 us, ok\n",
    "pytest failure": "E       AssertionError: assert 3 == 4\n    def test_x(board):\n",
    "letters": "a",
    "words": "x ",
    "base64 runs": "AbC9/",
    "setting names": "pass",
    "settings": "password=",
    "url schemes": "a://",
    "url users": "a://b:",
    "pem heads": "-----BEGIN ",
    "at signs": "@:/",
}


def best(fn: Callable[[], object], repeats: int) -> float:
    seconds = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        seconds = min(seconds, time.perf_counter() - started)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    size = args.megabytes * 1_000_000
    print(f"python {sys.version.split()[0]}; {args.megabytes} MB each, best of {args.repeats}")
    print("| text | scrub MB/s | json.dumps MB/s (baseline) | ratio |")
    print("|---|---|---|---|")
    for name, unit in TEXTS.items():
        text = unit * (size // len(unit))
        scrubbed = best(lambda t=text: scrub(t), args.repeats)  # type: ignore[misc]
        dumped = best(lambda t=text: json.dumps(t), args.repeats)  # type: ignore[misc]
        mb = len(text) / 1e6
        print(f"| {name} | {mb / scrubbed:.0f} | {mb / dumped:.0f} | {scrubbed / dumped:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
