"""Codec at odd channel counts and odd widths, as a ratio to ``numpy.copyto`` in the same run.

    python benchmarks/bench_codec_shapes.py    # every layout x C = 1, 3, 17, 255, 256, 1000
    python benchmarks/bench_codec_shapes.py --repeats 21 --no-kernel

For every 8-bit and 16-bit layout and channel count (W odd), four ratios, each the median over
``--repeats`` of (codec time / baseline time) with the two timed back to back:

- ``pack`` / ``unpack``: into reused memory (``out=``) ÷ ``numpy.copyto`` of the same bytes
  between two contiguous pre-faulted arrays ("the same bytes": the larger of the tensor and the
  packed buffer, which is what either direction has to move);
- ``pack fresh`` / ``unpack fresh``: into a buffer allocated by the call ÷ ``numpy.copyto`` into
  a freshly allocated contiguous array of the same size: both pay the first-touch page faults;
- ``faults``: what those page faults cost alone, the fresh copy ÷ the warm one;
- with ``--breakdown``, a warm pack in its steps: ``clear`` (the padding zeroed), ``encode``
  (values to bytes, H/L planes, or H/L blocks where the two slots are one block apart), ``copy``
  (the strided copies).

Times are the thread's CPU time (``time.thread_time``), which leaves out the time the thread
waits for a core: on a shared machine wall times of the same copy move by 2x, CPU times by
about 10%. Then the worst ratio per layout and column, against the targets (2x for 8-bit, 4x
for HL and 16-bit).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

CHANNELS = (1, 3, 17, 255, 256, 1000)
# (H, W) per channel count: W odd, tensors of 1.5-3 MB (a 16-bit tensor gets half the rows).
SPATIAL = {
    1: (1080, 1919),
    3: (720, 1279),
    17: (320, 321),
    255: (80, 81),
    256: (80, 81),
    1000: (40, 41),
}


@dataclass(frozen=True)
class Layout:
    target: str
    name: str
    dtype: str
    role: str
    channels: tuple[int, ...] = CHANNELS

    @property
    def label(self) -> str:
        return f"{self.target} {self.name} {self.dtype}"

    @property
    def wide(self) -> bool:
        """HL or 16-bit: the 4x target."""
        return np.dtype(self.dtype).itemsize == 2


LAYOUTS = (
    Layout("rk3588", "NC1HWC2", "int8", "output"),
    Layout("rk3588", "NHWC", "int8", "output"),
    Layout("rk3588", "NHWC", "uint8", "input", (1, 3)),
    Layout("kl730", "1W16C8B", "int8", "output"),
    Layout("kl730", "1W16C8B_CH_COMPACT", "int8", "output"),
    Layout("kl730", "16W1C8B", "int8", "output"),
    Layout("kl730", "4W4C8B", "uint8", "input"),
    Layout("kl730", "HW1C8B", "int8", "output"),
    Layout("rdk-s100", "strided", "uint8", "output"),
    Layout("rk3588", "NC1HWC2", "float16", "output"),
    Layout("kl730", "1W16C8BHL", "int16", "output"),
    Layout("kl730", "16W1C8BHL", "int16", "output"),
    Layout("kl730", "4W4C8BHL", "int16", "output"),
    Layout("kl730", "8W1C16B", "int16", "output"),
    Layout("kl730", "HW1C16B_LE", "int16", "output"),
    Layout("kl730", "HW1C16B_BE", "int16", "output"),
)

COLUMNS = ("pack", "unpack", "pack fresh", "unpack fresh", "faults")
BREAKDOWN = ("clear", "encode", "copy")


def thread_ratio(base: Callable[[], object], fn: Callable[[], object], repeats: int) -> float:
    """Median over ``repeats`` of fn's CPU time ÷ base's, the two run back to back."""
    base()
    fn()
    ratios = []
    for _ in range(repeats):
        t0 = time.thread_time()
        base()
        t1 = time.thread_time()
        fn()
        t2 = time.thread_time()
        ratios.append((t2 - t1) / max(t1 - t0, 1e-9))
    return float(np.median(ratios))


def random_tensor(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dtype == "float16":
        return rng.standard_normal(shape, dtype=np.float32).astype(np.float16)
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    # bit 0 cleared: the KL730 16-bit encodings drop it, so the round trip is exact
    return values & ~np.array(1, dtype=dtype) if info.bits == 16 else values


def measure(
    layout: Layout, channels: int, repeats: int, breakdown: bool = False
) -> dict[str, Any] | None:
    from npu_hil.harness.codec import aligned_empty, get_layout
    from npu_hil.harness.errors import LayoutError

    h, w = SPATIAL[channels]
    if layout.wide:
        h = max(1, h // 2)
    shape = (1, channels, h, w)
    try:
        lay = get_layout(layout.target, layout.name, shape, layout.dtype, role=layout.role)
    except LayoutError:
        return None  # the layout does not take this channel count (e.g. a 3-channel input)
    tensor = random_tensor(shape, layout.dtype)
    buffer = lay.pack(tensor)
    if not np.array_equal(lay.unpack(buffer), tensor, equal_nan=True):
        raise AssertionError(f"{layout.label} {shape}: round trip differs")
    nbytes = max(tensor.nbytes, lay.nbytes)
    src = np.random.default_rng(1).integers(0, 255, nbytes, dtype=np.uint8)
    dst = np.empty_like(src)
    out_buf = np.empty_like(buffer)
    out_tensor = np.empty_like(tensor)

    def warm() -> None:
        np.copyto(dst, src)

    def fresh() -> None:
        np.copyto(aligned_empty(nbytes), src)

    row: dict[str, Any] = {"layout": layout, "C": channels, "shape": shape, "MB": nbytes / 1e6}
    row["pack"] = thread_ratio(warm, lambda: lay.pack(tensor, out=out_buf), repeats)
    row["unpack"] = thread_ratio(warm, lambda: lay.unpack(buffer, out=out_tensor), repeats)
    row["pack fresh"] = thread_ratio(fresh, lambda: lay.pack(tensor), repeats)
    row["unpack fresh"] = thread_ratio(fresh, lambda: lay.unpack(buffer), repeats)
    row["faults"] = thread_ratio(warm, fresh, repeats)
    if breakdown:
        row.update(pack_breakdown(lay, tensor, out_buf, warm, repeats))
    return row


def pack_breakdown(
    lay: Any, tensor: np.ndarray, out: np.ndarray, warm: Callable[[], None], repeats: int
) -> dict[str, float]:
    """A warm pack in its three steps, each ÷ the same baseline: clearing the padding (as the
    layout does it on a repack), encoding the values into bytes or byte planes, and the strided
    copies into the buffer."""
    from npu_hil.harness.codec import slot_blocks

    canonical = tensor.reshape(lay.canonical_shape)
    if lay.stored != lay.canonical_shape:
        canonical = canonical[tuple(slice(0, s) for s in lay.stored)]
    enc = lay.encoding
    block = slot_blocks.slot_block(lay)
    channels = slot_blocks.channel_block(lay)
    if channels is not None:  # one step, timed whole as the copy
        fills = channels[2]
    else:
        fills = block is not None and slot_blocks.blocks_fill_buffer(lay, block)

    def encode() -> Any:
        if enc.interleaved:
            return enc.pack_interleaved(canonical)
        if channels is not None:
            return None
        if block is not None:  # the two slots as blocks, placed in one copy
            return slot_blocks.encode(lay, canonical, block)
        return enc.pack_planes(canonical)

    encoded = encode()
    if block is not None and channels is None:
        encoded = encoded.copy()  # encode() reuses its scratch: keep this one apart

    def copy() -> None:
        if enc.interleaved:
            lay._copy_in(out, encoded, slot=None)
        elif channels is not None:
            slot_blocks.pack_channels(lay, out, canonical, *channels[:2])
        elif block is not None:
            slot_blocks.place(lay, out, encoded, block)
        else:
            for slot, plane in enumerate(encoded):
                lay._copy_in(out, plane, slot=slot)

    def clear() -> None:
        if lay.padding_bytes and not fills:  # blocks that fill the buffer write the padding
            lay._zero_padding(out)

    return {
        "clear": thread_ratio(warm, clear, repeats),
        "encode": thread_ratio(warm, encode, repeats),
        "copy": thread_ratio(warm, copy, repeats),
    }


def _cells(row: dict[str, Any]) -> str:
    shape = "x".join(map(str, row["shape"]))
    cells = [f"{row['layout'].label:<30}", f"{shape:<14}", f"{row['MB']:5.1f}"]
    cells += [f"{row[c]:.2f}".rjust(len(c)) for c in COLUMNS]
    cells += [f"{row[c]:.2f}".rjust(len(c)) for c in BREAKDOWN if c in row]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--no-kernel", action="store_true", help="numpy path only")
    parser.add_argument("--only", default="", help="layouts whose label contains this")
    parser.add_argument(
        "--breakdown", action="store_true", help="a warm pack's clear / encode / copy too"
    )
    args = parser.parse_args(argv)
    if args.no_kernel:
        os.environ["NPU_HIL_NO_KERNEL"] = "1"
    from npu_hil.harness.codec import fastcopy

    print(
        f"compiled kernel: {fastcopy.kernel_isa() or 'no'}; numpy {np.__version__}; "
        f"python {sys.version.split()[0]}; load {os.getloadavg()[0]:.1f}"
    )
    print("ratios: median of codec CPU time / numpy.copyto CPU time of the same bytes")
    header = ("layout", "shape", "MB", *COLUMNS, *(BREAKDOWN if args.breakdown else ()))
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    rows = []
    for layout in LAYOUTS:
        if args.only and args.only not in layout.label:
            continue
        for channels in layout.channels:
            row = measure(layout, channels, args.repeats, args.breakdown)
            if row is not None:
                rows.append(row)
                print(_cells(row), flush=True)
    print()
    print("worst per layout (C at which it happens); target 2x for 8-bit, 4x for HL / 16-bit")
    worst_header = ("layout", "target", *COLUMNS[:4], "faults", "met")
    print("| " + " | ".join(worst_header) + " |")
    print("|" + "|".join("---" for _ in worst_header) + "|")
    for layout in LAYOUTS:
        mine = [r for r in rows if r["layout"] == layout]
        if not mine:
            continue
        target = 4.0 if layout.wide else 2.0
        cells = [layout.label, f"{target:.0f}x"]
        met = True
        for column in COLUMNS:
            worst = max(mine, key=lambda r: r[column])
            cells.append(f"{worst[column]:.2f} (C={worst['C']})")
            if column != "faults":
                met = met and worst[column] <= target
        cells.append("yes" if met else "no")
        print("| " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
