"""Benchmark ``strided_copy`` against ``np.copyto`` on the NPU layouts' pack/unpack patterns.

For each pattern and size it prints the throughput (logical bytes / time) of

* ``contig``: ``np.copyto`` between two contiguous arrays of the same bytes (the yardstick),
* ``numpy``:  ``np.copyto`` into (pack) or out of (unpack) the strided view,
* ``kernel``: ``strided_copy``, the same copy,

and each time as a multiple of the contiguous copy's (``numpy x``, ``kernel x``; ``speedup`` is
numpy's time over the kernel's). The three are timed in turn within each repeat (numpy's
strided copy first, so that the contiguous copy and the kernel both start from the caches it
left), and the best of the repeats is kept, so that a noisy neighbour slows all three alike.

Run: ``python benchmarks/bench_fastcopy.py [--sizes 6.2,64] [--isa base|avx2|avx512]``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from npu_hil.harness.codec import fastcopy
from npu_hil.harness.codec.fastcopy import strided_copy

MB = 1_000_000


@dataclass(frozen=True)
class Pattern:
    name: str
    shape: tuple[int, ...]  # the logical, contiguous tensor
    strides: tuple[int, ...]  # of the packed view
    nbytes: int  # of the packed buffer
    dtype: type[np.generic] = np.uint8


def patterns(mb: float) -> list[Pattern]:
    """The layouts that matter, scaled to about ``mb`` MB of logical tensor each."""
    s = (mb / 6.2) ** 0.5  # 6.2 MB: a 1080x1920 RGB image
    h, w = round(1080 * s), round(1920 * s)
    hw = round(160 * s)  # 16 groups x 16 channels x hw x hw ~ 6.5 MB at s = 1
    rows = round(8000 * s * s)
    w16 = w // 2
    return [
        Pattern("4W4C8B/HW4C8B_DROP_A", (1, 3, h, w), (0, 1, w * 4, 4), h * w * 4),
        Pattern(
            "1W16C8B/NC1HWC2",
            (1, 16, 16, hw, hw),
            (0, hw * hw * 16, 1, hw * 16, 16),
            256 * hw * hw,
        ),
        Pattern(
            "1W16C8B_CH_COMPACT",
            (1, 16, 16, hw, hw),
            (0, 16, 1, hw * 256, 256),
            256 * hw * hw,
        ),
        Pattern(
            "1W16C8BHL",
            (1, 8, 16, hw, hw, 2),
            (0, hw * hw * 32, 1, hw * 32, 32, 16),
            8 * hw * hw * 32,
        ),
        Pattern("RKNN NHWC u8", (1, 3, h, w), (0, 1, w * 3, 3), h * w * 3),
        Pattern(
            "RKNN NHWC f16",
            (1, 3, h, w16),
            (0, 2, w16 * 6, 6),
            h * w16 * 6,
            np.float16,
        ),
        Pattern("16W1C8B row pitch", (1, 8, rows, 100), (0, rows * 112, 112, 1), 8 * rows * 112),
    ]


def best_of(fns: list[Callable[[], object]], repeats: int) -> list[float]:
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def bench(p: Pattern, repeats: int) -> list[tuple[str, float, float, float]]:
    rng = np.random.default_rng(0)
    n = int(np.prod(p.shape)) * np.dtype(p.dtype).itemsize
    tensor = rng.integers(0, 256, size=n, dtype=np.uint8).view(p.dtype).reshape(p.shape)
    buf = np.zeros(p.nbytes, np.uint8)
    view = np.ndarray(p.shape, dtype=p.dtype, buffer=buf, strides=p.strides)
    out = np.empty_like(tensor)
    contig = np.empty_like(tensor)
    rows = []
    for direction, dst, src in (("pack", view, tensor), ("unpack", out, view)):
        t_numpy, t_contig, t_kernel = best_of(
            [
                partial(np.copyto, dst, src),
                partial(np.copyto, contig, tensor),
                partial(strided_copy, dst, src),
            ],
            repeats,
        )
        np.copyto(out, 0)
        strided_copy(dst, src)
        if direction == "unpack":
            assert np.array_equal(out.view(np.uint8), tensor.view(np.uint8)), p.name
        rows.append((direction, t_contig, t_numpy, t_kernel))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="6.2,64", help="logical tensor sizes in MB (default 6.2,64)")
    ap.add_argument("--repeats", type=int, default=0, help="repeats per timing (default: auto)")
    ap.add_argument("--isa", default=None, help="cap the kernel level: base, avx2, avx512")
    args = ap.parse_args()

    isa = fastcopy.kernel_isa()
    if args.isa is not None and isa is not None:
        isa = importlib.import_module("npu_hil.harness.codec._kernels").set_isa(args.isa)
    print(f"kernel: {isa or 'not available (numpy fallback)'}; numpy {np.__version__}")
    header = (
        f"{'pattern':22s} {'dir':6s} {'MB':>6s} | {'contig MB/s':>11s} {'numpy MB/s':>10s} "
        f"{'kernel MB/s':>11s} | {'numpy x':>7s} {'kernel x':>8s} {'speedup':>7s}"
    )
    for mb in (float(x) for x in args.sizes.split(",")):
        print()
        print(header)
        print("-" * len(header))
        for p in patterns(mb):
            nbytes = int(np.prod(p.shape)) * np.dtype(p.dtype).itemsize
            repeats = args.repeats or max(3, min(30, int(300 * MB / nbytes)))
            for direction, tc, tn, tk in bench(p, repeats):
                print(
                    f"{p.name:22s} {direction:6s} {nbytes / MB:6.1f} | "
                    f"{nbytes / tc / MB:11.0f} {nbytes / tn / MB:10.0f} {nbytes / tk / MB:11.0f} | "
                    f"{tn / tc:7.2f} {tk / tc:8.2f} {tn / tk:7.1f}"
                )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
