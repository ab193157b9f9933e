"""Codec throughput as a ratio to ``numpy.copyto`` of the same number of bytes, in the same run.

    python benchmarks/bench_codec.py            # all cases, with the compiled kernel if built
    python benchmarks/bench_codec.py --quick    # the small sizes only
    python benchmarks/bench_codec.py --no-kernel  # numpy only, to see what the kernel buys

For each case: the time of pack and unpack as a ratio to the time ``numpy.copyto`` takes to copy
the same bytes between two preallocated arrays (lower is better; 1.0 is a plain memory copy),
into a fresh buffer (the default) and into reused memory (``out=``), which leaves out the
first-touch page faults of a fresh allocation that the baseline does not pay. Best of several
repeats.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Case:
    label: str
    target: str
    layout: str
    shape: tuple[int, ...]
    dtype: str
    role: str
    params: dict[str, Any]
    big: bool = False


CASES = (
    Case("kl730 4W4C8B", "kl730", "4W4C8B", (1, 3, 1080, 1920), "uint8", "input", {}),
    Case("kl730 HW4C8B_DROP_A", "kl730", "HW4C8B_DROP_A", (1, 3, 1080, 1920), "uint8", "input", {}),
    Case("kl730 1W16C8B", "kl730", "1W16C8B", (1, 256, 80, 80), "int8", "output", {}),
    Case(
        "kl730 1W16C8B_CH_COMPACT",
        "kl730",
        "1W16C8B_CH_COMPACT",
        (1, 256, 80, 80),
        "int8",
        "output",
        {},
    ),
    Case("kl730 16W1C8B", "kl730", "16W1C8B", (1, 64, 270, 400), "int8", "output", {}),
    Case("rk3588 NC1HWC2 int8", "rk3588", "NC1HWC2", (1, 256, 80, 80), "int8", "output", {}),
    Case("rk3588 NHWC input w_stride", "rk3588", "NHWC", (1, 3, 1080, 1918), "uint8", "input", {}),
    Case("rdk-s100 strided u8", "rdk-s100", "strided", (1, 3, 1080, 1910), "uint8", "output", {}),
    Case("kl730 1W16C8BHL", "kl730", "1W16C8BHL", (1, 64, 160, 160), "int16", "output", {}),
    Case("kl730 8W1C16B", "kl730", "8W1C16B", (1, 64, 160, 160), "int16", "output", {}),
    Case("rk3588 NC1HWC2 fp16", "rk3588", "NC1HWC2", (1, 128, 80, 80), "float16", "output", {}),
    # Well beyond the CPU caches (64 MB and up).
    Case("kl730 4W4C8B 4K", "kl730", "4W4C8B", (1, 3, 4320, 7680), "uint8", "input", {}, True),
    Case("kl730 1W16C8B 64MB", "kl730", "1W16C8B", (1, 1024, 256, 256), "int8", "output", {}, True),
    Case(
        "rk3588 NC1HWC2 64MB", "rk3588", "NC1HWC2", (1, 1024, 256, 256), "int8", "output", {}, True
    ),
    Case("rk3588 NHWC input 4K", "rk3588", "NHWC", (1, 3, 4320, 7678), "uint8", "input", {}, True),
    Case(
        "kl730 1W16C8BHL 64MB",
        "kl730",
        "1W16C8BHL",
        (1, 512, 256, 256),
        "int16",
        "output",
        {},
        True,
    ),
)


def best_of(fn: Callable[[], object], repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def random_tensor(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dtype == "float16":
        return rng.standard_normal(shape, dtype=np.float32).astype(np.float16)
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    return values & ~np.array(1, dtype=dtype) if info.bits == 16 else values


def run(cases: tuple[Case, ...], repeats: int) -> list[dict[str, Any]]:
    from npu_hil.harness.codec import get_layout

    rows = []
    for case in cases:
        layout = get_layout(
            case.target, case.layout, case.shape, case.dtype, role=case.role, **case.params
        )
        tensor = random_tensor(case.shape, case.dtype)
        buffer = layout.pack(tensor)
        assert np.array_equal(layout.unpack(buffer), tensor), case.label
        copy_dst = np.empty_like(tensor)
        t_copy = best_of(partial(np.copyto, copy_dst, tensor), repeats)
        t_pack = best_of(partial(layout.pack, tensor), repeats)
        t_unpack = best_of(partial(layout.unpack, buffer), repeats)
        # Into reused memory, as the baseline copies into a preallocated array.
        t_pack_out = best_of(partial(layout.pack, tensor, out=np.empty_like(buffer)), repeats)
        t_unpack_out = best_of(partial(layout.unpack, buffer, out=np.empty_like(tensor)), repeats)
        mb = tensor.nbytes / 1e6
        rows.append(
            {
                "case": case.label,
                "MB": mb,
                "copy MB/s": mb / t_copy,
                "pack": t_pack / t_copy,
                "unpack": t_unpack / t_copy,
                "pack out=": t_pack_out / t_copy,
                "unpack out=": t_unpack_out / t_copy,
            }
        )
        print(_format_row(rows[-1]), flush=True)
    return rows


HEADER = ("case", "MB", "copy MB/s", "pack", "unpack", "pack out=", "unpack out=")


def _format_row(row: dict[str, Any]) -> str:
    cells = [f"{row['case']:<27}", f"{row['MB']:7.1f}", f"{row['copy MB/s']:9.0f}"]
    cells += [f"{row[key]:.2f}".rjust(len(key)) for key in HEADER[3:]]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the cases beyond the caches")
    parser.add_argument("--no-kernel", action="store_true", help="numpy path only")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if args.no_kernel:
        os.environ["NPU_HIL_NO_KERNEL"] = "1"
    from npu_hil.harness.codec import fastcopy

    print(
        f"compiled kernel: {fastcopy.kernel_isa() or 'no'}; numpy {np.__version__}; "
        f"python {sys.version.split()[0]}"
    )
    print("ratios are time / numpy.copyto of the same bytes into a preallocated array")
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "|".join("---" for _ in HEADER) + "|")
    cases = tuple(c for c in CASES if not (args.quick and c.big))
    run(cases, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
