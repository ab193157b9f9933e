"""Buffer diff time as a ratio to ``numpy.array_equal`` on the same bytes, in the same run.

    python benchmarks/bench_diff.py           # 100 MB buffers
    python benchmarks/bench_diff.py --mb 16   # smaller, quicker

Cases: equal buffers (the common nightly case) with the expected side given as packed bytes and
as the logical tensor (which adds packing it); 1% of elements different, reporting the first 100
mismatches and reporting none (what locating and reporting costs). Best of several repeats.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from functools import partial

import numpy as np


def best_of(fn: Callable[[], object], repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100, help="buffer size in MB (default 100)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    from npu_hil.harness.codec import get_layout
    from npu_hil.harness.diff import diff_buffers

    channels = max(16, args.mb * 1_000_000 // (256 * 256) // 16 * 16)
    layout = get_layout("kl730", "1W16C8B", (1, channels, 256, 256), "int8")
    rng = np.random.default_rng(0)
    tensor = rng.integers(-128, 127, layout.shape, endpoint=True).astype(np.int8)
    packed = layout.pack(tensor)
    device = packed.copy()
    wrong = device.copy()
    chosen = rng.choice(device.size, size=device.size // 100, replace=False)
    wrong[chosen] ^= 0x5A

    baseline = best_of(partial(np.array_equal, packed, device), args.repeats)
    rows = [
        ("equal, expected packed", partial(diff_buffers, layout, packed, device)),
        ("equal, expected tensor", partial(diff_buffers, layout, tensor, device)),
        ("1% differ, first 100", partial(diff_buffers, layout, packed, wrong, first=100)),
        ("1% differ, first 0", partial(diff_buffers, layout, packed, wrong, first=0)),
    ]
    print(
        f"buffer {packed.nbytes / 1e6:.0f} MB ({layout.target} {layout.name} "
        f"{list(layout.shape)}); numpy.array_equal {baseline * 1e3:.1f} ms"
    )
    print("| case | ms | ratio to array_equal |")
    print("|---|---|---|")
    timings = {}
    for label, fn in rows:
        seconds = best_of(fn, args.repeats)
        timings[label] = seconds
        print(f"| {label} | {seconds * 1e3:.1f} | {seconds / baseline:.2f} |", flush=True)
    overhead = timings["1% differ, first 100"] / timings["1% differ, first 0"] - 1
    print(f"reporting the first 100 mismatches adds {overhead * 100:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
